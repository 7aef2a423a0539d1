#include "runtime/Engine.h"
#include "runtime/train/Session.h"
