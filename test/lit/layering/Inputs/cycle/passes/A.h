#pragma once
#include "passes/B.h"
