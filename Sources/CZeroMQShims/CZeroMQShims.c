// Everything CZeroMQShims offers is `static inline` in include/CZeroMQShims.h; SwiftPM builds a C
// target only from at least one source file, and this is it.
#include "CZeroMQShims.h"
