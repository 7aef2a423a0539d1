// Errors as values: Error and Expected<T>, the one error type of the public API and of every
// layer. Its home is the lowest layer, ir/Error.h; this is its public name.
#pragma once

#include "ir/Error.h"
