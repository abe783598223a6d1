// Loads the codecs' libraries, Little CMS and SQLite with dlopen on first use (see COspreyLibraryLoader.h for why).
#include "COspreyLibraryLoader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#if defined(__APPLE__)
#define SHARED_SUFFIX ".dylib"
#else
#define SHARED_SUFFIX ".so"
#endif

/// Looks `name` up in `handle` into `table->name`; on failure, closes the handle and fails the load.
#define LOOK_UP(name)                                                                                                  \
    do {                                                                                                               \
        void *symbol = dlsym(handle, #name);                                                                           \
        if (symbol == NULL) {                                                                                          \
            dlclose(handle);                                                                                           \
            return "a function Osprey needs is missing from the library (" #name ")";                                  \
        }                                                                                                              \
        memcpy(&table->name, &symbol, sizeof(symbol));                                                                 \
    } while (0)

/// One `LOOK_UP`, for the lists of names in the header.
#define LOOK_UP_EACH(name) LOOK_UP(name);

/// `fill_LIB` for a library accepted on its names alone: each function of the header's `LIST` looked up.
#define DEFINE_FILL(lib, LIST) DEFINE_CHECKED_FILL(lib, LIST, 1, NULL)

/// `fill_LIB` that looks up each function of `LIST`, then accepts the library only when `accepted` (an expression
/// over `table`) holds, closing it with `refusal` otherwise.
#define DEFINE_CHECKED_FILL(lib, LIST, accepted, refusal)                                                              \
    static const char *fill_##lib(void *handle, osprey_##lib##_functions *table) {                                     \
        LIST(LOOK_UP_EACH)                                                                                             \
        if (!(accepted)) {                                                                                             \
            dlclose(handle);                                                                                           \
            return refusal;                                                                                            \
        }                                                                                                              \
        return NULL;                                                                                                   \
    }

#define STRINGIFY_VALUE(value) #value
#define STRINGIFY(value) STRINGIFY_VALUE(value)

/// `load_LIB`: opens each of `LIB_names` in turn and keeps the first that `fill_LIB` accepts (a machine may have two
/// versions installed, one without the headers' ABI); the last refusal's reason, or `missing`, when none is accepted.
/// Then `osprey_LIB_functions_load`: `load_LIB` run once, its table or its failure kept for every later call.
#define DEFINE_LOADER(lib, missing)                                                                                    \
    static const char *load_##lib(osprey_##lib##_functions *table) {                                                  \
        const char *failure = missing;                                                                                 \
        for (const char *const *name = lib##_names; *name != NULL; name++) {                                           \
            void *handle = dlopen(*name, RTLD_NOW | RTLD_LOCAL);                                                       \
            if (handle == NULL) continue;                                                                              \
            failure = fill_##lib(handle, table);                                                                       \
            if (failure == NULL) return NULL;                                                                          \
        }                                                                                                              \
        return failure;                                                                                                \
    }                                                                                                                  \
    osprey_##lib##_functions osprey_##lib##_table;                                                                     \
    static const char *lib##_failure;                                                                                  \
    static pthread_once_t lib##_once = PTHREAD_ONCE_INIT;                                                              \
    static void load_##lib##_once(void) { lib##_failure = load_##lib(&osprey_##lib##_table); }                        \
    const osprey_##lib##_functions *osprey_##lib##_functions_load(const char **reason) {                              \
        pthread_once(&lib##_once, load_##lib##_once);                                                                  \
        if (lib##_failure != NULL) {                                                                                   \
            if (reason != NULL) *reason = lib##_failure;                                                               \
            return NULL;                                                                                               \
        }                                                                                                              \
        return &osprey_##lib##_table;                                                                                  \
    }

// MARK: libavif

// Debian and Ubuntu name it by its ABI number, which the version does not give: every one since 0.9, newest first,
// then the development link; the version check keeps only the headers' ABI.
static const char *const avif_names[] = {
    "libavif" SHARED_SUFFIX ".16", "libavif" SHARED_SUFFIX ".15", "libavif" SHARED_SUFFIX ".14",
    "libavif" SHARED_SUFFIX ".13", "libavif.16.dylib", "libavif.15.dylib", "libavif" SHARED_SUFFIX, NULL,
};

/// Fills `table` from an opened libavif and checks its version; closes it and says why when it is refused.
static const char *fill_avif(void *handle, osprey_avif_functions *table) {
    LOOK_UP(avifDecoderCreate);
    LOOK_UP(avifDecoderDestroy);
    LOOK_UP(avifDecoderNextImage);
    LOOK_UP(avifDecoderNthImageTiming);
    LOOK_UP(avifDecoderParse);
    LOOK_UP(avifDecoderSetIOMemory);
    LOOK_UP(avifEncoderAddImage);
    LOOK_UP(avifEncoderCreate);
    LOOK_UP(avifEncoderDestroy);
    LOOK_UP(avifEncoderFinish);
    LOOK_UP(avifImageCreate);
    LOOK_UP(avifImageDestroy);
    LOOK_UP(avifImageRGBToYUV);
    LOOK_UP(avifImageSetMetadataExif);
    LOOK_UP(avifImageSetMetadataXMP);
    LOOK_UP(avifImageSetProfileICC);
    LOOK_UP(avifImageYUVToRGB);
    LOOK_UP(avifRGBImageSetDefaults);
    LOOK_UP(avifRWDataFree);
    LOOK_UP(avifResultToString);
    LOOK_UP(avifVersion);
    int major = 0, minor = 0;
    if (sscanf(table->avifVersion(), "%d.%d", &major, &minor) != 2 || major != AVIF_VERSION_MAJOR ||
        minor != AVIF_VERSION_MINOR) {
        dlclose(handle);
        return "the installed libavif is not the version Osprey was built with";
    }
    return NULL;
}

DEFINE_LOADER(avif, "libavif is not installed (the libavif shared library cannot be opened)")

// MARK: libheif

static const char *const heif_names[] = {
    "libheif" SHARED_SUFFIX ".1",
    "libheif.1.dylib",
    "libheif" SHARED_SUFFIX,
    NULL,
};

/// Fills `table` from an opened libheif, checks its version and initialises it; closes it and says why when it is
/// refused.
static const char *fill_heif(void *handle, osprey_heif_functions *table) {
    LOOK_UP(heif_context_alloc);
    LOOK_UP(heif_context_free);
    LOOK_UP(heif_context_get_primary_image_handle);
    LOOK_UP(heif_context_read_from_memory_without_copy);
    LOOK_UP(heif_context_set_maximum_image_size_limit);
    LOOK_UP(heif_decode_image);
    LOOK_UP(heif_decoding_options_alloc);
    LOOK_UP(heif_decoding_options_free);
    LOOK_UP(heif_image_get_bits_per_pixel_range);
    LOOK_UP(heif_image_get_height);
    LOOK_UP(heif_image_get_plane_readonly);
    LOOK_UP(heif_image_get_width);
    LOOK_UP(heif_image_handle_get_height);
    LOOK_UP(heif_image_handle_get_list_of_metadata_block_IDs);
    LOOK_UP(heif_image_handle_get_luma_bits_per_pixel);
    LOOK_UP(heif_image_handle_get_metadata);
    LOOK_UP(heif_image_handle_get_metadata_content_type);
    LOOK_UP(heif_image_handle_get_metadata_size);
    LOOK_UP(heif_image_handle_get_metadata_type);
    LOOK_UP(heif_image_handle_get_nclx_color_profile);
    LOOK_UP(heif_image_handle_get_number_of_metadata_blocks);
    LOOK_UP(heif_image_handle_get_raw_color_profile);
    LOOK_UP(heif_image_handle_get_raw_color_profile_size);
    LOOK_UP(heif_image_handle_get_width);
    LOOK_UP(heif_image_handle_has_alpha_channel);
    LOOK_UP(heif_image_handle_release);
    LOOK_UP(heif_image_release);
    LOOK_UP(heif_init);
    LOOK_UP(heif_nclx_color_profile_free);
    LOOK_UP(heif_get_version_number_major);
    LOOK_UP(heif_get_version_number_minor);
    if (table->heif_get_version_number_major() != (int)(LIBHEIF_NUMERIC_VERSION >> 24) ||
        table->heif_get_version_number_minor() < (int)((LIBHEIF_NUMERIC_VERSION >> 16) & 0xFF)) {
        dlclose(handle);
        return "the installed libheif is older than the version Osprey was built with";
    }
    struct heif_error error = table->heif_init(NULL);
    if (error.code != heif_error_Ok) {
        dlclose(handle);
        return "libheif cannot be initialised";
    }
    return NULL;
}

DEFINE_LOADER(heif, "libheif is not installed (the libheif shared library cannot be opened)")

// MARK: libjxl

// libjxl 0.x names its ABI by major and minor version (libjxl.so.0.7), 1.x and later by major.
static const char *const jxl_names[] = {
#if JPEGXL_MAJOR_VERSION == 0
    "libjxl" SHARED_SUFFIX ".0." STRINGIFY(JPEGXL_MINOR_VERSION),
    "libjxl.0." STRINGIFY(JPEGXL_MINOR_VERSION) ".dylib",
#else
    "libjxl" SHARED_SUFFIX "." STRINGIFY(JPEGXL_MAJOR_VERSION),
    "libjxl." STRINGIFY(JPEGXL_MAJOR_VERSION) ".dylib",
#endif
    "libjxl" SHARED_SUFFIX,
    NULL,
};

/// Fills `table` from an opened libjxl and checks its version; closes it and says why when it is refused.
static const char *fill_jxl(void *handle, osprey_jxl_functions *table) {
    LOOK_UP(JxlColorEncodingSetToSRGB);
    LOOK_UP(JxlDecoderCloseInput);
    LOOK_UP(JxlDecoderCreate);
    LOOK_UP(JxlDecoderDestroy);
    LOOK_UP(JxlDecoderFlushImage);
    LOOK_UP(JxlDecoderGetBasicInfo);
    LOOK_UP(JxlDecoderGetColorAsEncodedProfile);
    LOOK_UP(JxlDecoderGetColorAsICCProfile);
    LOOK_UP(JxlDecoderGetFrameHeader);
    LOOK_UP(JxlDecoderGetICCProfileSize);
    LOOK_UP(JxlDecoderImageOutBufferSize);
    LOOK_UP(JxlDecoderProcessInput);
    LOOK_UP(JxlDecoderReleaseJPEGBuffer);
    LOOK_UP(JxlDecoderSetDesiredIntensityTarget);
    LOOK_UP(JxlDecoderSetImageOutBuffer);
    LOOK_UP(JxlDecoderSetInput);
    LOOK_UP(JxlDecoderSetJPEGBuffer);
    LOOK_UP(JxlDecoderSetKeepOrientation);
    LOOK_UP(JxlDecoderSetPreferredColorProfile);
    LOOK_UP(JxlDecoderSubscribeEvents);
    LOOK_UP(JxlEncoderAddImageFrame);
    LOOK_UP(JxlEncoderCloseInput);
    LOOK_UP(JxlEncoderCreate);
    LOOK_UP(JxlEncoderDestroy);
    LOOK_UP(JxlEncoderFrameSettingsCreate);
    LOOK_UP(JxlEncoderFrameSettingsSetOption);
    LOOK_UP(JxlEncoderGetError);
    LOOK_UP(JxlEncoderInitBasicInfo);
    LOOK_UP(JxlEncoderInitFrameHeader);
    LOOK_UP(JxlEncoderProcessOutput);
    LOOK_UP(JxlEncoderSetBasicInfo);
    LOOK_UP(JxlEncoderSetColorEncoding);
    LOOK_UP(JxlEncoderSetFrameDistance);
    LOOK_UP(JxlEncoderSetFrameHeader);
    LOOK_UP(JxlEncoderSetFrameLossless);
    LOOK_UP(JxlEncoderSetICCProfile);
    LOOK_UP(JxlDecoderVersion);
    uint32_t version = table->JxlDecoderVersion();  // major * 1000000 + minor * 1000 + patch
    if (version / 1000000 != JPEGXL_MAJOR_VERSION || version / 1000 % 1000 != JPEGXL_MINOR_VERSION) {
        dlclose(handle);
        return "the installed libjxl is not the version Osprey was built with";
    }
    return NULL;
}

DEFINE_LOADER(jxl, "libjxl is not installed (the libjxl shared library cannot be opened)")

// MARK: Little CMS

// The run-time library's name on Linux (ABI 2 since Little CMS 2.0), macOS, then the development link.
static const char *const lcms_names[] = {"liblcms2.so.2", "liblcms2.2.dylib", "liblcms2.so", NULL};

/// Fills `table` from an opened liblcms2.
static const char *fill_lcms(void *handle, osprey_lcms_functions *table) {
    LOOK_UP(cmsBuildGamma);
    LOOK_UP(cmsBuildParametricToneCurve);
    LOOK_UP(cmsCloseProfile);
    LOOK_UP(cmsCreateContext);
    LOOK_UP(cmsCreateGrayProfileTHR);
    LOOK_UP(cmsCreateRGBProfileTHR);
    LOOK_UP(cmsCreateTransformTHR);
    LOOK_UP(cmsCreate_sRGBProfileTHR);
    LOOK_UP(cmsD50_xyY);
    LOOK_UP(cmsDeleteTransform);
    LOOK_UP(cmsDoTransform);
    LOOK_UP(cmsDoTransformLineStride);
    LOOK_UP(cmsEvalToneCurveFloat);
    LOOK_UP(cmsFreeToneCurve);
    LOOK_UP(cmsGetColorSpace);
    LOOK_UP(cmsGetProfileInfoASCII);
    LOOK_UP(cmsIsCLUT);
    LOOK_UP(cmsIsMatrixShaper);
    LOOK_UP(cmsOpenProfileFromMemTHR);
    LOOK_UP(cmsReadTag);
    LOOK_UP(cmsSaveProfileToMem);
    LOOK_UP(cmsSetLogErrorHandlerTHR);
    return NULL;
}

DEFINE_LOADER(lcms, "liblcms2 is not installed (Debian and Ubuntu: liblcms2-2)")

// Stand-ins, when liblcms2 cannot be opened: nothing is made, so nothing else is ever called with what they made.

static cmsToneCurve *no_gamma(cmsContext c, cmsFloat64Number g) { return NULL; }
static cmsToneCurve *no_curve(cmsContext c, cmsInt32Number t, const cmsFloat64Number p[]) { return NULL; }
static cmsBool no_close(cmsHPROFILE p) { return FALSE; }
static cmsContext no_context(void *plugin, void *user) { return NULL; }
static cmsHPROFILE no_gray(cmsContext c, const cmsCIExyY *w, const cmsToneCurve *t) { return NULL; }
static cmsHPROFILE no_rgb(cmsContext c, const cmsCIExyY *w, const cmsCIExyYTRIPLE *p, cmsToneCurve *const t[3]) {
    return NULL;
}
static cmsHTRANSFORM no_transform(cmsContext c, cmsHPROFILE i, cmsUInt32Number fi, cmsHPROFILE o, cmsUInt32Number fo,
                                  cmsUInt32Number intent, cmsUInt32Number flags) {
    return NULL;
}
static cmsHPROFILE no_srgb(cmsContext c) { return NULL; }
static const cmsCIExyY d50 = {0.3457, 0.3585, 1.0};
static const cmsCIExyY *d50_xyY(void) { return &d50; }
static void no_delete(cmsHTRANSFORM t) {}
static void no_do(cmsHTRANSFORM t, const void *i, void *o, cmsUInt32Number n) {}
static void no_do_stride(cmsHTRANSFORM t, const void *i, void *o, cmsUInt32Number w, cmsUInt32Number h,
                         cmsUInt32Number bi, cmsUInt32Number bo, cmsUInt32Number si, cmsUInt32Number so) {}
static cmsFloat32Number no_eval(const cmsToneCurve *t, cmsFloat32Number v) { return 0; }
static void no_free_curve(cmsToneCurve *t) {}
static cmsColorSpaceSignature no_space(cmsHPROFILE p) { return (cmsColorSpaceSignature)0; }
static cmsUInt32Number no_info(cmsHPROFILE p, cmsInfoType i, const char l[3], const char c[3], char *b,
                               cmsUInt32Number n) {
    return 0;
}
static cmsBool no_clut(cmsHPROFILE p, cmsUInt32Number i, cmsUInt32Number d) { return FALSE; }
static cmsBool no_matrix(cmsHPROFILE p) { return FALSE; }
static cmsHPROFILE no_open(cmsContext c, const void *m, cmsUInt32Number n) { return NULL; }
static void *no_tag(cmsHPROFILE p, cmsTagSignature s) { return NULL; }
static cmsBool no_save(cmsHPROFILE p, void *m, cmsUInt32Number *n) { return FALSE; }
static void no_log(cmsContext c, cmsLogErrorHandlerFunction f) {}

static const osprey_lcms_functions stand_ins = {
    no_gamma, no_curve, no_close, no_context, no_gray, no_rgb, no_transform, no_srgb, d50_xyY, no_delete, no_do,
    no_do_stride, no_eval, no_free_curve, no_space, no_info, no_clut, no_matrix, no_open, no_tag, no_save, no_log,
};

const osprey_lcms_functions *osprey_lcms_functions_or_stand_ins(void) {
    const osprey_lcms_functions *table = osprey_lcms_functions_load(NULL);
    return table != NULL ? table : &stand_ins;
}

const char *osprey_lcms_failure(void) {
    const char *reason = NULL;
    osprey_lcms_functions_load(&reason);
    return reason;
}

// MARK: SQLite

// The run-time library's name on Linux (its ABI has been 0 since SQLite 3.0), macOS, then the development link.
static const char *const sqlite_names[] = {"libsqlite3.so.0", "libsqlite3.dylib", "libsqlite3.so", NULL};

/// Fills `table` from an opened libsqlite3 and checks its version; closes it and says why when it is refused.
static const char *fill_sqlite(void *handle, osprey_sqlite_functions *table) {
    LOOK_UP(sqlite3_libversion_number);
    if (table->sqlite3_libversion_number() < 3008007) {
        dlclose(handle);
        return "the installed libsqlite3 is older than 3.8.7";
    }
    LOOK_UP(sqlite3_bind_blob64);
    LOOK_UP(sqlite3_bind_double);
    LOOK_UP(sqlite3_bind_int64);
    LOOK_UP(sqlite3_bind_null);
    LOOK_UP(sqlite3_bind_text);
    LOOK_UP(sqlite3_bind_zeroblob);
    LOOK_UP(sqlite3_busy_timeout);
    LOOK_UP(sqlite3_clear_bindings);
    LOOK_UP(sqlite3_close);
    LOOK_UP(sqlite3_column_blob);
    LOOK_UP(sqlite3_column_bytes);
    LOOK_UP(sqlite3_column_count);
    LOOK_UP(sqlite3_column_double);
    LOOK_UP(sqlite3_column_int64);
    LOOK_UP(sqlite3_column_text);
    LOOK_UP(sqlite3_column_type);
    LOOK_UP(sqlite3_errmsg);
    LOOK_UP(sqlite3_exec);
    LOOK_UP(sqlite3_finalize);
    LOOK_UP(sqlite3_free);
    LOOK_UP(sqlite3_open_v2);
    LOOK_UP(sqlite3_prepare_v2);
    LOOK_UP(sqlite3_reset);
    LOOK_UP(sqlite3_step);
    return NULL;
}

DEFINE_LOADER(sqlite, "libsqlite3 is not installed (Debian and Ubuntu: libsqlite3-0)")

// MARK: libjpeg and TurboJPEG

// libjpeg-turbo names libjpeg by the libjpeg API it emulates (6b: .62, 7: .7, 8: .8), as JPEG_LIB_VERSION does;
// jpeg_CreateDecompress itself refuses a library whose version or structure sizes are not the headers'.
static const char *const jpeg_names[] = {
#if JPEG_LIB_VERSION == 62
    "libjpeg" SHARED_SUFFIX ".62", "libjpeg.62.dylib",
#elif JPEG_LIB_VERSION == 70
    "libjpeg" SHARED_SUFFIX ".7", "libjpeg.7.dylib",
#else
    "libjpeg" SHARED_SUFFIX ".8", "libjpeg.8.dylib",
#endif
    "libjpeg" SHARED_SUFFIX, NULL,
};

DEFINE_FILL(jpeg, OSPREY_JPEG_FUNCTIONS)

DEFINE_LOADER(jpeg, "libjpeg is not installed (Debian and Ubuntu: libjpeg62-turbo or libjpeg-turbo8)")

static const char *const turbojpeg_names[] = {
    "libturbojpeg" SHARED_SUFFIX ".0", "libturbojpeg.0.dylib", "libturbojpeg" SHARED_SUFFIX, NULL,
};

DEFINE_FILL(turbojpeg, OSPREY_TURBOJPEG_FUNCTIONS)

DEFINE_LOADER(turbojpeg, "libturbojpeg is not installed (Debian and Ubuntu: libturbojpeg0)")

// MARK: libpng

// libpng names its ABI by major and minor version (libpng16.so.16 for 1.6), and only a library of the headers' major
// and minor version is accepted (png_create_read_struct would refuse any other).
static const char *const png_names[] = {
    "libpng" STRINGIFY(PNG_LIBPNG_VER_SONUM) SHARED_SUFFIX "." STRINGIFY(PNG_LIBPNG_VER_SONUM),
    "libpng" STRINGIFY(PNG_LIBPNG_VER_SONUM) "." STRINGIFY(PNG_LIBPNG_VER_SONUM) ".dylib",
    "libpng" STRINGIFY(PNG_LIBPNG_VER_SONUM) SHARED_SUFFIX,
    NULL,
};

DEFINE_CHECKED_FILL(png, OSPREY_PNG_FUNCTIONS, table->png_access_version_number() / 100 == PNG_LIBPNG_VER / 100,
                    "the installed libpng is not the version Osprey was built with")

DEFINE_LOADER(png, "libpng is not installed (Debian and Ubuntu: libpng16-16)")

// MARK: libwebp, libwebpdemux, libwebpmux

// Their ABI numbers are not in the headers (libwebp 0.5 to 1.x: .so.7, .so.2, .so.3); each library's own ABI check,
// the one its `…Internal` entry points make, decides whether it is accepted.
static const char *const webp_names[] = {
    "libwebp" SHARED_SUFFIX ".7", "libwebp.7.dylib", "libwebp" SHARED_SUFFIX, NULL,
};

DEFINE_CHECKED_FILL(webp, OSPREY_WEBP_FUNCTIONS,
                    table->WebPInitDecoderConfigInternal(&(WebPDecoderConfig){0}, WEBP_DECODER_ABI_VERSION) &&
                        table->WebPConfigInitInternal(&(WebPConfig){0}, WEBP_PRESET_DEFAULT, 75,
                                                      WEBP_ENCODER_ABI_VERSION),
                    "the installed libwebp does not have the ABI Osprey was built with")

DEFINE_LOADER(webp, "libwebp is not installed (Debian and Ubuntu: libwebp7)")

static const char *const webpdemux_names[] = {
    "libwebpdemux" SHARED_SUFFIX ".2", "libwebpdemux.2.dylib", "libwebpdemux" SHARED_SUFFIX, NULL,
};

DEFINE_CHECKED_FILL(webpdemux, OSPREY_WEBPDEMUX_FUNCTIONS,
                    table->WebPAnimDecoderOptionsInitInternal(&(WebPAnimDecoderOptions){0}, WEBP_DEMUX_ABI_VERSION),
                    "the installed libwebpdemux does not have the ABI Osprey was built with")

DEFINE_LOADER(webpdemux, "libwebpdemux is not installed (Debian and Ubuntu: libwebpdemux2)")

static const char *const webpmux_names[] = {
    "libwebpmux" SHARED_SUFFIX ".3", "libwebpmux.3.dylib", "libwebpmux" SHARED_SUFFIX, NULL,
};

DEFINE_CHECKED_FILL(webpmux, OSPREY_WEBPMUX_FUNCTIONS,
                    table->WebPAnimEncoderOptionsInitInternal(&(WebPAnimEncoderOptions){0}, WEBP_MUX_ABI_VERSION),
                    "the installed libwebpmux does not have the ABI Osprey was built with")

DEFINE_LOADER(webpmux, "libwebpmux is not installed (Debian and Ubuntu: libwebpmux3)")

// MARK: giflib

// giflib 5.1 and later (the API of the headers: DGifOpen with an error out-parameter, DGifCloseFile with one).
static const char *const gif_names[] = {"libgif" SHARED_SUFFIX ".7", "libgif.7.dylib", "libgif" SHARED_SUFFIX, NULL};

DEFINE_FILL(gif, OSPREY_GIF_FUNCTIONS)

DEFINE_LOADER(gif, "giflib is not installed (Debian and Ubuntu: libgif7)")

// MARK: libdeflate

// libdeflate's ABI has been 0 since 1.0.
static const char *const deflate_names[] = {
    "libdeflate" SHARED_SUFFIX ".0", "libdeflate.0.dylib", "libdeflate" SHARED_SUFFIX, NULL,
};

DEFINE_FILL(deflate, OSPREY_DEFLATE_FUNCTIONS)

DEFINE_LOADER(deflate, "libdeflate is not installed (Debian and Ubuntu: libdeflate0)")

// MARK: libimagequant

// libimagequant 2.x's ABI has been 0 (the 4.x rewrite in Rust keeps the C interface and the name); 2.8 and later have
// every function Osprey calls.
static const char *const imagequant_names[] = {
    "libimagequant" SHARED_SUFFIX ".0", "libimagequant.0.dylib", "libimagequant" SHARED_SUFFIX, NULL,
};

DEFINE_CHECKED_FILL(imagequant, OSPREY_IMAGEQUANT_FUNCTIONS, table->liq_version() >= 20800,
                    "the installed libimagequant is older than 2.8")

DEFINE_LOADER(imagequant, "libimagequant is not installed (Debian and Ubuntu: libimagequant0)")
