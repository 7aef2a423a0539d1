// Everything of libdtnn's public API in one include.
#pragma once

#include "dtnn/Compiler.h"
#include "dtnn/Error.h"
#include "dtnn/Plugin.h"
#include "dtnn/Registry.h"
#include "dtnn/Tools.h"
#include "dtnn/Train.h"
#include "dtnn/Version.h"
