#include "COspreyCodecShims.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define OSPREY_HUGE_PAGE ((size_t)2 << 20)
#define OSPREY_HUGE_THRESHOLD ((size_t)4 << 20)

static size_t osprey_rounded(size_t size) {
    return (size + OSPREY_HUGE_PAGE - 1) & ~(OSPREY_HUGE_PAGE - 1);
}

void *osprey_pixels_allocate(size_t size) {
    if (size < OSPREY_HUGE_THRESHOLD) {
        return calloc(size > 0 ? size : 1, 1);
    }
    size_t rounded = osprey_rounded(size);
    if (rounded < size) {
        return NULL;
    }
    // Map one huge page more than needed, then trim to a 2 MiB-aligned range: THP needs aligned 2 MiB extents.
    uint8_t *mapped = mmap(NULL, rounded + OSPREY_HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) {
        return NULL;
    }
    uint8_t *aligned = (uint8_t *)(((uintptr_t)mapped + OSPREY_HUGE_PAGE - 1) & ~(uintptr_t)(OSPREY_HUGE_PAGE - 1));
    if (aligned > mapped) {
        munmap(mapped, (size_t)(aligned - mapped));
    }
    size_t tail = (size_t)(mapped + rounded + OSPREY_HUGE_PAGE - (aligned + rounded));
    if (tail > 0) {
        munmap(aligned + rounded, tail);
    }
#ifdef MADV_HUGEPAGE
    madvise(aligned, rounded, MADV_HUGEPAGE);
#endif
    return aligned;  // Anonymous mappings are zero-filled.
}

void osprey_pixels_free(void *pixels, size_t size) {
    if (pixels == NULL) {
        return;
    }
    if (size < OSPREY_HUGE_THRESHOLD) {
        free(pixels);
    } else {
        munmap(pixels, osprey_rounded(size));
    }
}

void *osprey_pixels_shrink(void *pixels, size_t size, size_t newSize) {
    if (pixels == NULL || newSize >= size || size < OSPREY_HUGE_THRESHOLD) {
        return pixels;  // calloc'd buffers are freed whole whatever size is passed.
    }
    if (newSize < OSPREY_HUGE_THRESHOLD) {
        // osprey_pixels_free would call free() for this size: move the bytes to the heap.
        void *copy = malloc(newSize > 0 ? newSize : 1);
        if (copy == NULL) {
            return NULL;
        }
        memcpy(copy, pixels, newSize);
        munmap(pixels, osprey_rounded(size));
        return copy;
    }
    size_t kept = osprey_rounded(newSize);
    size_t mapped = osprey_rounded(size);
    if (kept < mapped) {
        munmap((uint8_t *)pixels + kept, mapped - kept);
    }
    return pixels;
}
