#pragma once
#include "ir/Error.h"
#include "runtime/Engine.h"
