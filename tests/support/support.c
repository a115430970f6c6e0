/* Test support library: see support.h. (Implemented by the core-reader work.)
 */
#include "support.h"
