#include "CMallocTuning.h"

#include <malloc.h>

int notify_route_fix_mmap_threshold(int bytes) {
    return mallopt(M_MMAP_THRESHOLD, bytes);
}
