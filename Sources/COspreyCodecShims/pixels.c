#include "COspreyCodecShims.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

// Buffers from this size up are mappings of their own, in size classes, and are recycled.
#define OSPREY_LARGE ((size_t)4 << 20)
// What the recycling pool may hold: a few buffers, 256 MiB in all.
#define OSPREY_POOL_SLOTS 4
#define OSPREY_POOL_BYTES ((size_t)256 << 20)

// The mapped length for a large buffer of `size` bytes: rounded up to an eighth of its power of two (at most 12.5%
// more), so buffers of nearly the same size share a class and can reuse each other's mapping. 0 on overflow.
static size_t osprey_class_length(size_t size) {
    size_t step = (size_t)1 << (63 - __builtin_clzll((unsigned long long)size) - 3);
    size_t length = (size + step - 1) & ~(step - 1);
    return length < size ? 0 : length;
}

// A mapping in the recycling pool.
typedef struct {
    void *pixels;
    size_t length;
} osprey_mapping;

// Large buffers freed recently, kept mapped (their pages resident) for the next buffer of the same class, newest last.
static struct {
    pthread_mutex_t lock;
    osprey_mapping mappings[OSPREY_POOL_SLOTS];
    size_t count;
    size_t bytes;
} osprey_pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

// Takes mapping `index` out of the pool; call with the lock held.
static osprey_mapping osprey_pool_remove(size_t index) {
    osprey_mapping mapping = osprey_pool.mappings[index];
    memmove(&osprey_pool.mappings[index], &osprey_pool.mappings[index + 1],
            (osprey_pool.count - index - 1) * sizeof(osprey_mapping));
    osprey_pool.count--;
    osprey_pool.bytes -= mapping.length;
    return mapping;
}

static void *osprey_pool_take(size_t length) {
    void *found = NULL;
    pthread_mutex_lock(&osprey_pool.lock);
    for (size_t i = osprey_pool.count; i > 0; i--) {
        if (osprey_pool.mappings[i - 1].length == length) {
            found = osprey_pool_remove(i - 1).pixels;
            break;
        }
    }
    pthread_mutex_unlock(&osprey_pool.lock);
    return found;
}

// Keeps `pixels` for reuse, unmapping the oldest buffers the pool must give up to make room.
static void osprey_pool_give(void *pixels, size_t length) {
    osprey_mapping evicted[OSPREY_POOL_SLOTS];  // The pool's whole content, or the buffer itself.
    size_t evictedCount = 0;
    if (length > OSPREY_POOL_BYTES) {
        evicted[evictedCount++] = (osprey_mapping){pixels, length};
    } else {
        pthread_mutex_lock(&osprey_pool.lock);
        while (osprey_pool.count == OSPREY_POOL_SLOTS || osprey_pool.bytes + length > OSPREY_POOL_BYTES) {
            evicted[evictedCount++] = osprey_pool_remove(0);
        }
        osprey_pool.mappings[osprey_pool.count++] = (osprey_mapping){pixels, length};
        osprey_pool.bytes += length;
        pthread_mutex_unlock(&osprey_pool.lock);
    }
    for (size_t i = 0; i < evictedCount; i++) {
        munmap(evicted[i].pixels, evicted[i].length);  // Outside the lock: unmapping 100 MB takes a while.
    }
}

void *osprey_pixels_allocate(size_t size) {
    if (size < OSPREY_LARGE) {
        return calloc(size > 0 ? size : 1, 1);
    }
    size_t length = osprey_class_length(size);
    if (length == 0) {
        return NULL;
    }
    void *recycled = osprey_pool_take(length);
    if (recycled != NULL) {
        memset(recycled, 0, size);  // Resident pages: clearing them is cheaper than faulting fresh ones in.
        return recycled;
    }
    // Plain pages, not huge ones: on a virtual machine that hands free memory back to its host (virtio-balloon free
    // page reporting), a fresh 2 MiB page is a run of host faults, which made keeping 1,000 decoded images 1.5-3x
    // slower in the kernel than 4 KiB pages; the pool gives repeated decodes warm pages without them.
    void *mapped = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) {
        return NULL;
    }
#ifdef MADV_POPULATE_WRITE
    madvise(mapped, size, MADV_POPULATE_WRITE);
#endif
    return mapped;  // Anonymous mappings are zero-filled.
}

void osprey_pixels_free(void *pixels, size_t size) {
    if (pixels == NULL) {
        return;
    }
    if (size < OSPREY_LARGE) {
        free(pixels);
    } else {
        osprey_pool_give(pixels, osprey_class_length(size));
    }
}

void *osprey_pixels_shrink(void *pixels, size_t size, size_t newSize) {
    if (pixels == NULL || newSize >= size || size < OSPREY_LARGE) {
        return pixels;  // calloc'd buffers are freed whole whatever size is passed.
    }
    if (newSize < OSPREY_LARGE) {
        // osprey_pixels_free would call free() for this size: move the bytes to the heap.
        void *copy = malloc(newSize > 0 ? newSize : 1);
        if (copy == NULL) {
            return NULL;
        }
        memcpy(copy, pixels, newSize);
        osprey_pixels_free(pixels, size);
        return copy;
    }
    size_t kept = osprey_class_length(newSize);
    size_t mapped = osprey_class_length(size);
    if (kept < mapped) {
        munmap((uint8_t *)pixels + kept, mapped - kept);
    }
    return pixels;
}

void osprey_pixels_release_recycled(void) {
    osprey_mapping released[OSPREY_POOL_SLOTS];
    pthread_mutex_lock(&osprey_pool.lock);
    size_t count = osprey_pool.count;
    memcpy(released, osprey_pool.mappings, count * sizeof(osprey_mapping));
    osprey_pool.count = 0;
    osprey_pool.bytes = 0;
    pthread_mutex_unlock(&osprey_pool.lock);
    for (size_t i = 0; i < count; i++) {
        munmap(released[i].pixels, released[i].length);
    }
}

size_t osprey_pixels_recycled_bytes(void) {
    pthread_mutex_lock(&osprey_pool.lock);
    size_t bytes = osprey_pool.bytes;
    pthread_mutex_unlock(&osprey_pool.lock);
    return bytes;
}
