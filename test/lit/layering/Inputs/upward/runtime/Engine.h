#pragma once
#include "ir/Types.h"
