// The error type: the bottom of every layer.
#pragma once
#include "dtnn/Registry.h"
