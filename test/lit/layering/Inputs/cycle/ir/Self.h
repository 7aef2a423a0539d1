#pragma once
#include "Self.h"
