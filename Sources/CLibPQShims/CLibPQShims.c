// Everything CLibPQShims offers is `static inline` in include/CLibPQShims.h; SwiftPM builds a C
// target only from at least one source file, and this is it.
#include "CLibPQShims.h"
