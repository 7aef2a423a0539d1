#pragma once
#include "runtime/train/Session.h"
