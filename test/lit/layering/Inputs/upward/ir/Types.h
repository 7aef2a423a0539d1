// A file of the IR layer that includes the engine above it.
#pragma once
#include <vector>
#include "runtime/Engine.h"
