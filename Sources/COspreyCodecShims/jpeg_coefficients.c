#include "jpeg_coefficients.h"

#include "COspreyCodecShims.h"
#include "jpeg_error.h"

#include <jerror.h>
#include <stdint.h>

// Offsets of arrays inside a buffer are multiples of this: libjpeg-turbo's SIMD routines expect its own alignment (32
// bytes), a cache line is 64.
#define OSPREY_COEFFICIENT_ALIGNMENT ((size_t)64)

// jpeglib.h leaves this type opaque so that a memory manager can define it: one whole-image coefficient array.
struct jvirt_barray_control {
    /// One pointer per row of blocks, into a buffer; NULL until realized.
    JBLOCKARRAY rows;
    JDIMENSION rowCount;
    JDIMENSION blocksPerRow;
    struct jvirt_barray_control *next;
};

// A buffer from osprey_pixels_allocate holding the arrays of one realization.
struct osprey_jpeg_coefficient_buffer {
    void *data;
    size_t size;
    struct osprey_jpeg_coefficient_buffer *next;
};

static osprey_jpeg_coefficients *osprey_coefficients(j_common_ptr info) {
    return (osprey_jpeg_coefficients *)info->client_data;
}

static jvirt_barray_ptr osprey_request_barray(j_common_ptr info, int pool, boolean preZero, JDIMENSION blocksPerRow,
                                              JDIMENSION rowCount, JDIMENSION maxAccess) {
    (void)preZero;    // Every buffer is zero-filled.
    (void)maxAccess;  // Every array is in memory whole.
    if (pool != JPOOL_IMAGE) {
        ERREXIT1(info, JERR_BAD_POOL_ID, pool);  // As libjpeg's own manager: image-lifetime arrays only.
    }
    osprey_jpeg_coefficients *arrays = osprey_coefficients(info);
    jvirt_barray_ptr array = (*info->mem->alloc_small)(info, JPOOL_IMAGE, sizeof(struct jvirt_barray_control));
    array->rows = NULL;
    array->rowCount = rowCount;
    array->blocksPerRow = blocksPerRow;
    array->next = arrays->requested;
    arrays->requested = array;
    return array;
}

static size_t osprey_aligned(size_t size) {
    return (size + OSPREY_COEFFICIENT_ALIGNMENT - 1) & ~(OSPREY_COEFFICIENT_ALIGNMENT - 1);
}

static void osprey_realize_arrays(j_common_ptr info) {
    osprey_jpeg_coefficients *arrays = osprey_coefficients(info);
    (*arrays->realize)(info);  // libjpeg's own sample arrays, if any were asked for
    if (arrays->requested == NULL) {
        return;
    }
    // Each array is at most 2^32 rows × 2^32 blocks × 128 bytes, so the sum of a few cannot overflow 64 bits; a
    // 32-bit size_t is checked when the total is converted.
    uint64_t total = 0;
    for (jvirt_barray_ptr array = arrays->requested; array != NULL; array = array->next) {
        total += osprey_aligned((uint64_t)array->rowCount * array->blocksPerRow * sizeof(JBLOCK));
    }
    long limit = info->mem->max_memory_to_use;
    if ((limit > 0 && total > (uint64_t)limit) || total > SIZE_MAX) {
        osprey_jpeg_error *error = (osprey_jpeg_error *)info->err;
        snprintf(error->message, OSPREY_MESSAGE_CAPACITY,
                 "%llu bytes of coefficients exceed the decoder memory limit of %ld bytes", (unsigned long long)total,
                 limit);
        longjmp(error->jump, 2);
    }
    struct osprey_jpeg_coefficient_buffer *buffer =
        (*info->mem->alloc_small)(info, JPOOL_IMAGE, sizeof(struct osprey_jpeg_coefficient_buffer));
    buffer->data = osprey_pixels_allocate((size_t)total);
    if (buffer->data == NULL) {
        ERREXIT1(info, JERR_OUT_OF_MEMORY, 4);
    }
    buffer->size = (size_t)total;
    buffer->next = arrays->buffers;
    arrays->buffers = buffer;
    uint8_t *next = buffer->data;
    while (arrays->requested != NULL) {
        jvirt_barray_ptr array = arrays->requested;
        arrays->requested = array->next;
        array->next = NULL;
        array->rows = (*info->mem->alloc_large)(info, JPOOL_IMAGE, (size_t)array->rowCount * sizeof(JBLOCKROW));
        size_t rowSize = (size_t)array->blocksPerRow * sizeof(JBLOCK);
        for (JDIMENSION row = 0; row < array->rowCount; row++) {
            array->rows[row] = (JBLOCKROW)(next + (size_t)row * rowSize);
        }
        next += osprey_aligned((size_t)array->rowCount * rowSize);
    }
}

static JBLOCKARRAY osprey_access_barray(j_common_ptr info, jvirt_barray_ptr array, JDIMENSION startRow,
                                        JDIMENSION rowCount, boolean writable) {
    (void)writable;
    if (array->rows == NULL || (uint64_t)startRow + rowCount > array->rowCount) {
        ERREXIT(info, JERR_BAD_VIRTUAL_ACCESS);
    }
    return array->rows + startRow;
}

// Gives every buffer back (to be recycled) and forgets the arrays in them, which lived in the image pool.
static void osprey_release_arrays(osprey_jpeg_coefficients *arrays) {
    while (arrays->buffers != NULL) {
        struct osprey_jpeg_coefficient_buffer *buffer = arrays->buffers;
        arrays->buffers = buffer->next;
        osprey_pixels_free(buffer->data, buffer->size);
    }
    arrays->requested = NULL;
}

static void osprey_free_pool(j_common_ptr info, int pool) {
    osprey_jpeg_coefficients *arrays = osprey_coefficients(info);
    if (pool == JPOOL_IMAGE) {
        osprey_release_arrays(arrays);  // before libjpeg frees the pool that holds the bookkeeping
    }
    (*arrays->freePool)(info, pool);
}

static void osprey_self_destruct(j_common_ptr info) {
    osprey_jpeg_coefficients *arrays = osprey_coefficients(info);
    osprey_release_arrays(arrays);
    (*arrays->selfDestruct)(info);
}

void osprey_jpeg_coefficients_install(osprey_jpeg_coefficients *arrays, j_decompress_ptr info) {
    struct jpeg_memory_mgr *memory = info->mem;
    arrays->realize = memory->realize_virt_arrays;
    arrays->freePool = memory->free_pool;
    arrays->selfDestruct = memory->self_destruct;
    arrays->requested = NULL;
    arrays->buffers = NULL;
    info->client_data = arrays;
    memory->request_virt_barray = osprey_request_barray;
    memory->realize_virt_arrays = osprey_realize_arrays;
    memory->access_virt_barray = osprey_access_barray;
    memory->free_pool = osprey_free_pool;
    memory->self_destruct = osprey_self_destruct;
}
