#include "fs.h"
