#pragma once
#include "ir/C.h"
