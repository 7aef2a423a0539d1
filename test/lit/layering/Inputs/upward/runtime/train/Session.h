#pragma once
#include "dtnn/Error.h"
#include "runtime/Engine.h"
