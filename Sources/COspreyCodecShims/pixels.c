#include "COspreyCodecShims.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

// Buffers from this size up are mappings of their own, in size classes, and are recycled.
#define OSPREY_LARGE ((size_t)4 << 20)
// What the allocator's recycling pool may hold: a few buffers, 256 MiB in all.
#define OSPREY_POOL_SLOTS 4
#define OSPREY_POOL_BYTES ((size_t)256 << 20)

// The mapped length for a large buffer of `size` bytes: rounded up to an eighth of its power of two (at most 12.5%
// more), so buffers of nearly the same size share a class and can reuse each other's mapping. 0 on overflow.
static size_t osprey_class_length(size_t size) {
    size_t step = (size_t)1 << (63 - __builtin_clzll((unsigned long long)size) - 3);
    size_t length = (size + step - 1) & ~(step - 1);
    return length < size ? 0 : length;
}

// A mapping in a recycling pool.
typedef struct {
    void *pixels;
    size_t length;
} osprey_mapping;

// Large buffers freed recently, kept mapped (their pages resident) for the next buffers that fit, newest last.
struct osprey_pixel_pool {
    pthread_mutex_t lock;
    osprey_mapping mappings[OSPREY_POOL_SLOTS];
    size_t count;
    size_t bytes;
    size_t byteLimit;
    osprey_unmap_function unmap;
    void *context;
};

static void osprey_unmap(void *context, void *pixels, size_t length) {
    (void)context;
    munmap(pixels, length);
}

static osprey_pixel_pool osprey_pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER, .byteLimit = OSPREY_POOL_BYTES, .unmap = osprey_unmap};

osprey_pixel_pool *osprey_pixel_pool_create(size_t byteLimit, osprey_unmap_function unmap, void *context) {
    osprey_pixel_pool *pool = calloc(1, sizeof(osprey_pixel_pool));
    if (pool != NULL) {
        pthread_mutex_init(&pool->lock, NULL);
        pool->byteLimit = byteLimit;
        pool->unmap = unmap != NULL ? unmap : osprey_unmap;
        pool->context = context;
    }
    return pool;
}

void osprey_pixel_pool_destroy(osprey_pixel_pool *pool) {
    osprey_pixel_pool_drain(pool);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

// Takes mapping `index` out of `pool`; call with the lock held.
static osprey_mapping osprey_pool_remove(osprey_pixel_pool *pool, size_t index) {
    osprey_mapping mapping = pool->mappings[index];
    memmove(&pool->mappings[index], &pool->mappings[index + 1], (pool->count - index - 1) * sizeof(osprey_mapping));
    pool->count--;
    pool->bytes -= mapping.length;
    return mapping;
}

void *osprey_pixel_pool_take(osprey_pixel_pool *pool, size_t length) {
    size_t best = SIZE_MAX;
    osprey_mapping found = {NULL, 0};
    pthread_mutex_lock(&pool->lock);
    for (size_t i = 0; i < pool->count; i++) {
        size_t candidate = pool->mappings[i].length;
        if (candidate >= length && candidate / 2 <= length &&
            (best == SIZE_MAX || candidate < pool->mappings[best].length)) {
            best = i;
        }
    }
    if (best != SIZE_MAX) {
        found = osprey_pool_remove(pool, best);
    }
    pthread_mutex_unlock(&pool->lock);
    if (found.length > length) {
        // Outside the lock. Lengths are whole pages (class lengths are multiples of 512 KiB).
        pool->unmap(pool->context, (uint8_t *)found.pixels + length, found.length - length);
    }
    return found.pixels;
}

void osprey_pixel_pool_give(osprey_pixel_pool *pool, void *pixels, size_t length) {
    osprey_mapping evicted[OSPREY_POOL_SLOTS];  // The pool's whole content, or the buffer itself.
    size_t evictedCount = 0;
    if (length > pool->byteLimit) {
        evicted[evictedCount++] = (osprey_mapping){pixels, length};
    } else {
        pthread_mutex_lock(&pool->lock);
        while (pool->count == OSPREY_POOL_SLOTS || pool->bytes + length > pool->byteLimit) {
            evicted[evictedCount++] = osprey_pool_remove(pool, 0);
        }
        pool->mappings[pool->count++] = (osprey_mapping){pixels, length};
        pool->bytes += length;
        pthread_mutex_unlock(&pool->lock);
    }
    // Outside the lock: unmapping 100 MB takes a while.
    for (size_t i = 0; i < evictedCount; i++) {
        pool->unmap(pool->context, evicted[i].pixels, evicted[i].length);
    }
}

void osprey_pixel_pool_drain(osprey_pixel_pool *pool) {
    osprey_mapping released[OSPREY_POOL_SLOTS];
    pthread_mutex_lock(&pool->lock);
    size_t count = pool->count;
    memcpy(released, pool->mappings, count * sizeof(osprey_mapping));
    pool->count = 0;
    pool->bytes = 0;
    pthread_mutex_unlock(&pool->lock);
    for (size_t i = 0; i < count; i++) {
        pool->unmap(pool->context, released[i].pixels, released[i].length);
    }
}

size_t osprey_pixel_pool_bytes(osprey_pixel_pool *pool) {
    pthread_mutex_lock(&pool->lock);
    size_t bytes = pool->bytes;
    pthread_mutex_unlock(&pool->lock);
    return bytes;
}

static void *osprey_pixels_allocate_zeroed(size_t size, int zeroed) {
    if (size < OSPREY_LARGE) {
        return zeroed ? calloc(size > 0 ? size : 1, 1) : malloc(size > 0 ? size : 1);
    }
    size_t length = osprey_class_length(size);
    if (length == 0) {
        return NULL;
    }
    void *recycled = osprey_pixel_pool_take(&osprey_pool, length);
    if (recycled != NULL) {
        // Resident pages: clearing them is far cheaper than faulting fresh ones in.
        if (zeroed) memset(recycled, 0, size);
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

void *osprey_pixels_allocate(size_t size) { return osprey_pixels_allocate_zeroed(size, 1); }

void *osprey_pixels_allocate_uninitialized(size_t size) { return osprey_pixels_allocate_zeroed(size, 0); }

void osprey_pixels_free(void *pixels, size_t size) {
    if (pixels == NULL) {
        return;
    }
    if (size < OSPREY_LARGE) {
        free(pixels);
    } else {
        osprey_pixel_pool_give(&osprey_pool, pixels, osprey_class_length(size));
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

void osprey_pixels_release_recycled(void) { osprey_pixel_pool_drain(&osprey_pool); }

size_t osprey_pixels_recycled_bytes(void) { return osprey_pixel_pool_bytes(&osprey_pool); }

void osprey_cancel_set(int32_t *flag) {
    __atomic_store_n(flag, 1, __ATOMIC_RELAXED);
}

int32_t osprey_cancel_get(const int32_t *flag) {
    return __atomic_load_n(flag, __ATOMIC_RELAXED);
}
