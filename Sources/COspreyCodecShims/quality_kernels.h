// The vector loops of SSIMULACRA 2, written once for any vector width: quality.c includes this file once per width
// (four lanes everywhere, eight where the processor has AVX2), with
//   KERNEL(name)   the name a function of this width gets,
//   VECTOR_BYTES   the width in bytes (16 or 32),
//   KERNEL_TARGET  the attribute that lets the compiler use the instructions of that width,
// and chooses among them at run time. Every name defined here is undefined again at the end.

typedef float KERNEL(floats) __attribute__((vector_size(VECTOR_BYTES)));
typedef unsigned int KERNEL(unsigneds) __attribute__((vector_size(VECTOR_BYTES)));
#define lanes KERNEL(floats)
#define unsigned_lanes KERNEL(unsigneds)
#define LANES (VECTOR_BYTES / 4)
#define load KERNEL(load)
#define store KERNEL(store)
#define splat KERNEL(splat)
#define lane_sum KERNEL(lane_sum)
#define positive KERNEL(positive)
#define cube_root KERNEL(cube_root)

KERNEL_TARGET static inline lanes load(const float *p) {
    lanes v;
    memcpy(&v, p, sizeof v);
    return v;
}

KERNEL_TARGET static inline void store(float *p, lanes v) { memcpy(p, &v, sizeof v); }

KERNEL_TARGET static inline lanes splat(float value) { return (lanes){} + value; }

KERNEL_TARGET static inline float lane_sum(lanes v) {
    // Half the lanes onto the other half, until one is left.
    for (int width = LANES / 2; width >= 1; width /= 2) {
        for (int i = 0; i < width; i++) v[i] += v[i + width];
    }
    return v[0];
}

KERNEL_TARGET static inline lanes positive(lanes v) { return __builtin_elementwise_max(v, splat(0)); }

// Cube roots of values of at least libjxl's bias: an estimate from the exponent bits, then two Halley steps (each
// triples the correct digits), to single precision; several times faster than cbrtf.
KERNEL_TARGET static inline lanes cube_root(lanes value) {
    unsigned_lanes bits;
    memcpy(&bits, &value, sizeof bits);
    bits = bits / 3 + 709921077u;
    lanes root;
    memcpy(&root, &bits, sizeof root);
    for (int i = 0; i < 2; i++) {
        lanes cube = root * root * root;
        root *= (cube + 2 * value) / (2 * cube + value);
    }
    return root;
}

KERNEL_TARGET static void KERNEL(xyb)(const float *red, const float *green, const float *blue, size_t count, float *x,
                                      float *y, float *b) {
    const float root_of_bias = cube_root(splat(BIAS))[0];
    size_t i = 0;
    // Rescaled as SSIMULACRA 2 does: X × 14 + 0.42, Y + 0.01, B − Y + 0.55, all within about 0–1.
    for (; i + LANES <= count; i += LANES) {
        lanes r = load(red + i), g = load(green + i), bl = load(blue + i);
        lanes mixed0 = cube_root(M00 * r + M01 * g + M02 * bl + BIAS) - root_of_bias;
        lanes mixed1 = cube_root(M10 * r + M11 * g + M12 * bl + BIAS) - root_of_bias;
        lanes mixed2 = cube_root(M20 * r + M21 * g + M22 * bl + BIAS) - root_of_bias;
        lanes luma = 0.5f * (mixed0 + mixed1);
        store(x + i, 0.5f * (mixed0 - mixed1) * 14 + 0.42f);
        store(y + i, luma + 0.01f);
        store(b + i, (mixed2 - luma) + 0.55f);
    }
    for (; i < count; i++) {
        float mixed0 = cube_root(splat(M00 * red[i] + M01 * green[i] + M02 * blue[i] + BIAS))[0] - root_of_bias;
        float mixed1 = cube_root(splat(M10 * red[i] + M11 * green[i] + M12 * blue[i] + BIAS))[0] - root_of_bias;
        float mixed2 = cube_root(splat(M20 * red[i] + M21 * green[i] + M22 * blue[i] + BIAS))[0] - root_of_bias;
        float luma = 0.5f * (mixed0 + mixed1);
        x[i] = 0.5f * (mixed0 - mixed1) * 14 + 0.42f;
        y[i] = luma + 0.01f;
        b[i] = (mixed2 - luma) + 0.55f;
    }
}

KERNEL_TARGET static void KERNEL(weighted_sum)(const float *const *rows, const float *kernel, uint32_t width,
                                               float *output) {
    // The kernel is symmetric: taps k and 10 - k share a weight. The rows and weights are copied first: the output
    // could alias them as far as the compiler knows, which would have it load them again for every vector.
    const float *row[11];
    lanes weight[6];
    for (int k = 0; k < 11; k++) row[k] = rows[k];
    for (int k = 0; k < 6; k++) weight[k] = splat(kernel[k]);
    uint32_t x = 0;
    for (; x + LANES <= width; x += LANES) {
        lanes sum = load(row[5] + x) * weight[5];
        for (int k = 0; k < 5; k++) sum += (load(row[k] + x) + load(row[10 - k] + x)) * weight[k];
        store(output + x, sum);
    }
    for (; x < width; x++) {
        float sum = rows[5][x] * kernel[5];
        for (int k = 0; k < 5; k++) sum += (rows[k][x] + rows[10 - k][x]) * kernel[k];
        output[x] = sum;
    }
}

KERNEL_TARGET static void KERNEL(multiply)(const float *a, const float *b, uint32_t width, float *output) {
    uint32_t x = 0;
    for (; x + LANES <= width; x += LANES) store(output + x, load(a + x) * load(b + x));
    for (; x < width; x++) output[x] = a[x] * b[x];
}

KERNEL_TARGET static void KERNEL(error_sums)(const float *reference, const float *distorted, const float *mean1,
                                             const float *mean2, const float *sigma11, const float *sigma22,
                                             const float *sigma12, uint32_t width, double *sums) {
    const float c2 = 0.0009f;
    lanes s1 = splat(0), s4 = splat(0), a1 = splat(0), a4 = splat(0), d1 = splat(0), d4 = splat(0);
    uint32_t x = 0;
    for (; x + LANES <= width; x += LANES) {
        lanes mu1 = load(mean1 + x), mu2 = load(mean2 + x);
        lanes difference = mu1 - mu2;
        lanes numerator_m = 1 - difference * difference;
        lanes numerator_s = 2 * (load(sigma12 + x) - mu1 * mu2) + c2;
        lanes denominator_s = (load(sigma11 + x) - mu1 * mu1) + (load(sigma22 + x) - mu2 * mu2) + c2;
        // SSIM without its luminance denominator, as an error (1 − SSIM), never below zero.
        lanes error = positive(1 - numerator_m * numerator_s / denominator_s);
        s1 += error;
        lanes squared = error * error;
        s4 += squared * squared;
        // > 0: the distorted image has an edge where the reference is smooth (ringing, banding, blocks);
        // < 0: the reverse (blurring, smearing).
        lanes ratio = (1 + __builtin_elementwise_abs(load(distorted + x) - mu2)) /
                          (1 + __builtin_elementwise_abs(load(reference + x) - mu1)) -
                      1;
        lanes artifact = positive(ratio), lost = positive(-ratio);
        a1 += artifact;
        lanes artifact2 = artifact * artifact;
        a4 += artifact2 * artifact2;
        d1 += lost;
        lanes lost2 = lost * lost;
        d4 += lost2 * lost2;
    }
    float tail[6] = {0};
    for (; x < width; x++) {
        float mu1 = mean1[x], mu2 = mean2[x];
        float difference = mu1 - mu2;
        float numerator_m = 1 - difference * difference;
        float numerator_s = 2 * (sigma12[x] - mu1 * mu2) + c2;
        float denominator_s = (sigma11[x] - mu1 * mu1) + (sigma22[x] - mu2 * mu2) + c2;
        float error = fmaxf(1 - numerator_m * numerator_s / denominator_s, 0);
        float ratio = (1 + fabsf(distorted[x] - mu2)) / (1 + fabsf(reference[x] - mu1)) - 1;
        float artifact = fmaxf(ratio, 0), lost = fmaxf(-ratio, 0);
        tail[0] += error;
        tail[1] += error * error * error * error;
        tail[2] += artifact;
        tail[3] += artifact * artifact * artifact * artifact;
        tail[4] += lost;
        tail[5] += lost * lost * lost * lost;
    }
    sums[0] += lane_sum(s1) + tail[0];
    sums[1] += lane_sum(s4) + tail[1];
    sums[2] += lane_sum(a1) + tail[2];
    sums[3] += lane_sum(a4) + tail[3];
    sums[4] += lane_sum(d1) + tail[4];
    sums[5] += lane_sum(d4) + tail[5];
}

#undef lanes
#undef unsigned_lanes
#undef LANES
#undef load
#undef store
#undef splat
#undef lane_sum
#undef positive
#undef cube_root
