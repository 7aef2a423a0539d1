#pragma once
#include "passes/A.h"
