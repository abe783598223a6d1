#include "COspreyCodecShims.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#define OSPREY_SSE2 1
#endif

struct osprey_rgb_matrix_transform {
    int16_t columns[3][256][4];
    uint8_t encode[16384];
    uint32_t scale;
};

osprey_rgb_matrix_transform *osprey_rgb_matrix_transform_create(const int16_t *columns, const uint8_t *encode,
                                                                uint32_t scale) {
    if (scale == 0 || scale > 16383) {
        return NULL;
    }
    osprey_rgb_matrix_transform *transform = malloc(sizeof(*transform));
    if (transform == NULL) {
        return NULL;
    }
    memcpy(transform->columns, columns, sizeof(transform->columns));
    memset(transform->encode, 0, sizeof(transform->encode));
    memcpy(transform->encode, encode, scale + 1);
    transform->scale = scale;
    return transform;
}

void osprey_rgb_matrix_transform_free(osprey_rgb_matrix_transform *transform) { free(transform); }

// One pixel through the tables: the three contributions summed in linear light, clamped, encoded.
static inline void osprey_matrix_pixel(const osprey_rgb_matrix_transform *transform, uint8_t *pixel) {
    const int16_t *r = transform->columns[0][pixel[0]];
    const int16_t *g = transform->columns[1][pixel[1]];
    const int16_t *b = transform->columns[2][pixel[2]];
    int32_t top = (int32_t)transform->scale;
    for (int channel = 0; channel < 3; channel++) {
        int32_t value = (int32_t)r[channel] + g[channel] + b[channel];
        value = value < 0 ? 0 : value > top ? top : value;
        pixel[channel] = transform->encode[value];
    }
}

void osprey_rgb_matrix_convert(void *context, uint8_t *rows, size_t bytesPerRow, uint32_t width, uint32_t count,
                               uint32_t components) {
    const osprey_rgb_matrix_transform *transform = context;
    for (uint32_t y = 0; y < count; y++) {
        uint8_t *pixel = rows + (size_t)y * bytesPerRow;
        uint32_t x = 0;
#if OSPREY_SSE2
        // Two pixels at a time: each one's three 4 × 16-bit contributions summed in one register (the sums cannot
        // saturate: the tables are scaled so that no row of the matrix reaches 32767), then clamped and encoded.
        const __m128i zero = _mm_setzero_si128();
        const __m128i top = _mm_set1_epi16((int16_t)transform->scale);
        for (; x + 2 <= width; x += 2) {
            uint8_t *second = pixel + components;
            __m128i r = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)transform->columns[0][pixel[0]]),
                                           _mm_loadl_epi64((const __m128i *)transform->columns[0][second[0]]));
            __m128i g = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)transform->columns[1][pixel[1]]),
                                           _mm_loadl_epi64((const __m128i *)transform->columns[1][second[1]]));
            __m128i b = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)transform->columns[2][pixel[2]]),
                                           _mm_loadl_epi64((const __m128i *)transform->columns[2][second[2]]));
            __m128i sum = _mm_min_epi16(_mm_max_epi16(_mm_add_epi16(_mm_add_epi16(r, g), b), zero), top);
            pixel[0] = transform->encode[_mm_extract_epi16(sum, 0)];
            pixel[1] = transform->encode[_mm_extract_epi16(sum, 1)];
            pixel[2] = transform->encode[_mm_extract_epi16(sum, 2)];
            second[0] = transform->encode[_mm_extract_epi16(sum, 4)];
            second[1] = transform->encode[_mm_extract_epi16(sum, 5)];
            second[2] = transform->encode[_mm_extract_epi16(sum, 6)];
            pixel += 2 * components;
        }
#endif
        for (; x < width; x++) {
            osprey_matrix_pixel(transform, pixel);
            pixel += components;
        }
    }
}

void osprey_table_convert(void *context, uint8_t *rows, size_t bytesPerRow, uint32_t width, uint32_t count,
                          uint32_t components) {
    const uint8_t *table = context;
    for (uint32_t y = 0; y < count; y++) {
        uint8_t *pixel = rows + (size_t)y * bytesPerRow;
        for (uint32_t x = 0; x < width; x++) {
            pixel[0] = table[pixel[0]];
            pixel += components;
        }
    }
}

// Rows are handed between the decoding thread and a helper in chunks of this many: the helper is woken when a whole
// chunk is ready (fewer wake-ups cost less CPU), and the chunk is still in the shared cache.
#define OSPREY_PIPELINE_CHUNK 64u
// Below this many pixels a second thread costs more than it saves: rows are converted as they are decoded.
#define OSPREY_PIPELINE_MIN_PIXELS ((uint64_t)1 << 20)

struct osprey_row_pipeline {
    osprey_row_converter converter;
    uint8_t *pixels;
    size_t bytesPerRow;
    uint32_t width;
    uint32_t height;
    uint32_t components;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    // Rows [0, ready) are decoded; [0, claimed) are being or have been converted.
    uint32_t ready;
    uint32_t claimed;
    // No more rows will become ready.
    int finished;
    // The helper waits for a chunk.
    int helperWaits;
    int hasHelper;
    pthread_t helper;
};

// Claims the next chunk of ready rows; while `waits` and rows may still come, first waits for a whole chunk to be
// ready. Returns the count (0: nothing to do).
static uint32_t osprey_pipeline_claim(osprey_row_pipeline *pipeline, int waits, uint32_t *first) {
    pthread_mutex_lock(&pipeline->lock);
    while (waits && pipeline->ready - pipeline->claimed < OSPREY_PIPELINE_CHUNK && !pipeline->finished) {
        pipeline->helperWaits = 1;
        pthread_cond_wait(&pipeline->changed, &pipeline->lock);
        pipeline->helperWaits = 0;
    }
    uint32_t available = pipeline->ready - pipeline->claimed;
    uint32_t count = available < OSPREY_PIPELINE_CHUNK ? available : OSPREY_PIPELINE_CHUNK;
    *first = pipeline->claimed;
    pipeline->claimed += count;
    pthread_mutex_unlock(&pipeline->lock);
    return count;
}

static void osprey_pipeline_convert(osprey_row_pipeline *pipeline, uint32_t first, uint32_t count) {
    pipeline->converter.convert(pipeline->converter.context, pipeline->pixels + (size_t)first * pipeline->bytesPerRow,
                                pipeline->bytesPerRow, pipeline->width, count, pipeline->components);
}

static void *osprey_pipeline_helper(void *argument) {
    osprey_row_pipeline *pipeline = argument;
    uint32_t first;
    uint32_t count;
    while ((count = osprey_pipeline_claim(pipeline, 1, &first)) > 0) {
        osprey_pipeline_convert(pipeline, first, count);
    }
    return NULL;
}

osprey_row_pipeline *osprey_row_pipeline_start(osprey_row_converter converter, uint8_t *pixels, size_t bytesPerRow,
                                               uint32_t width, uint32_t height, uint32_t components) {
    if (converter.convert == NULL) {
        return NULL;
    }
    osprey_row_pipeline *pipeline = calloc(1, sizeof(*pipeline));
    if (pipeline == NULL) {
        return NULL;
    }
    pipeline->converter = converter;
    pipeline->pixels = pixels;
    pipeline->bytesPerRow = bytesPerRow;
    pipeline->width = width;
    pipeline->height = height;
    pipeline->components = components;
    pthread_mutex_init(&pipeline->lock, NULL);
    pthread_cond_init(&pipeline->changed, NULL);
    if ((uint64_t)width * height >= OSPREY_PIPELINE_MIN_PIXELS && sysconf(_SC_NPROCESSORS_ONLN) > 1) {
        pipeline->hasHelper = pthread_create(&pipeline->helper, NULL, osprey_pipeline_helper, pipeline) == 0;
    }
    return pipeline;
}

void osprey_row_pipeline_ready(osprey_row_pipeline *pipeline, uint32_t rows) {
    if (pipeline == NULL) {
        return;
    }
    if (!pipeline->hasHelper) {
        // No helper: the rows just decoded are converted now, while they are in the cache.
        if (rows > pipeline->ready) {
            osprey_pipeline_convert(pipeline, pipeline->ready, rows - pipeline->ready);
            pipeline->ready = pipeline->claimed = rows;
        }
        return;
    }
    pthread_mutex_lock(&pipeline->lock);
    if (rows > pipeline->ready) {
        pipeline->ready = rows;
        if (pipeline->helperWaits && pipeline->ready - pipeline->claimed >= OSPREY_PIPELINE_CHUNK) {
            pthread_cond_signal(&pipeline->changed);
        }
    }
    pthread_mutex_unlock(&pipeline->lock);
}

void osprey_row_pipeline_finish(osprey_row_pipeline *pipeline, uint32_t rows) {
    if (pipeline == NULL) {
        return;
    }
    osprey_row_pipeline_ready(pipeline, rows);
    if (pipeline->hasHelper) {
        pthread_mutex_lock(&pipeline->lock);
        pipeline->finished = 1;
        pthread_cond_broadcast(&pipeline->changed);
        pthread_mutex_unlock(&pipeline->lock);
        // What is left is shared with the helper, chunk by chunk.
        uint32_t first;
        uint32_t count;
        while ((count = osprey_pipeline_claim(pipeline, 0, &first)) > 0) {
            osprey_pipeline_convert(pipeline, first, count);
        }
        pthread_join(pipeline->helper, NULL);
    }
    pthread_cond_destroy(&pipeline->changed);
    pthread_mutex_destroy(&pipeline->lock);
    free(pipeline);
}

void osprey_rows_convert(osprey_row_converter converter, uint8_t *pixels, size_t bytesPerRow, uint32_t width,
                         uint32_t height, uint32_t components) {
    osprey_row_pipeline *pipeline =
        osprey_row_pipeline_start(converter, pixels, bytesPerRow, width, height, components);
    if (pipeline == NULL) {
        if (converter.convert != NULL) {
            converter.convert(converter.context, pixels, bytesPerRow, width, height, components);
        }
        return;
    }
    osprey_row_pipeline_finish(pipeline, height);
}
