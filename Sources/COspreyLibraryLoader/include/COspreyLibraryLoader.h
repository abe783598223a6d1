// The C libraries Osprey opens when first used rather than when the process starts: libavif, libheif and libjxl,
// Little CMS and SQLite. Linked, libavif, libheif and libjxl cost about 10 ms of every start-up (their dependencies'
// static initialisers — libhwy measures its timer, libde265 builds tables — and some forty more shared objects to
// map), which every `osprey --version`, every `osprey info` of a JPEG and every short-lived process pays; Little CMS
// and SQLite are each one more shared object to map and relocate, for processes that read no colour profile or open
// no disk cache. The functions Osprey calls are looked up in a table per library; the headers' types and constants
// are used as they are.
//
// A library is found by its shared-object names (the one the headers were built against first) and accepted only
// when its run-time version has the headers' ABI: libavif's and libjxl's major and minor version, libheif's major
// version and at least its minor (libheif 1.x only adds functions), SQLite from 3.8.7 (the first with
// `sqlite3_bind_blob64`; its interface only grows), any Little CMS 2.
//
// When liblcms2 cannot be opened, `osprey_lcms_functions_or_stand_ins` gives stand-ins that make nothing (every
// profile, curve and transform comes back NULL): images decode as untagged, with a warning that says why
// (`osprey_lcms_failure`).
#ifndef OSPREY_LIBRARY_LOADER_H
#define OSPREY_LIBRARY_LOADER_H

#include <avif/avif.h>
#include <jxl/decode.h>
#include <jxl/encode.h>
#include <lcms2.h>
#include <libheif/heif.h>
#include <sqlite3.h>

#define OSPREY_FUNCTION(name) __typeof__(name) *_Nonnull name

/// The libavif functions Osprey calls.
typedef struct {
    OSPREY_FUNCTION(avifDecoderCreate);
    OSPREY_FUNCTION(avifDecoderDestroy);
    OSPREY_FUNCTION(avifDecoderNextImage);
    OSPREY_FUNCTION(avifDecoderNthImageTiming);
    OSPREY_FUNCTION(avifDecoderParse);
    OSPREY_FUNCTION(avifDecoderSetIOMemory);
    OSPREY_FUNCTION(avifEncoderAddImage);
    OSPREY_FUNCTION(avifEncoderCreate);
    OSPREY_FUNCTION(avifEncoderDestroy);
    OSPREY_FUNCTION(avifEncoderFinish);
    OSPREY_FUNCTION(avifImageCreate);
    OSPREY_FUNCTION(avifImageDestroy);
    OSPREY_FUNCTION(avifImageRGBToYUV);
    OSPREY_FUNCTION(avifImageSetMetadataExif);
    OSPREY_FUNCTION(avifImageSetMetadataXMP);
    OSPREY_FUNCTION(avifImageSetProfileICC);
    OSPREY_FUNCTION(avifImageYUVToRGB);
    OSPREY_FUNCTION(avifRGBImageSetDefaults);
    OSPREY_FUNCTION(avifRWDataFree);
    OSPREY_FUNCTION(avifResultToString);
    OSPREY_FUNCTION(avifVersion);
} osprey_avif_functions;

/// The libheif functions Osprey calls.
typedef struct {
    OSPREY_FUNCTION(heif_context_alloc);
    OSPREY_FUNCTION(heif_context_free);
    OSPREY_FUNCTION(heif_context_get_primary_image_handle);
    OSPREY_FUNCTION(heif_context_read_from_memory_without_copy);
    OSPREY_FUNCTION(heif_context_set_maximum_image_size_limit);
    OSPREY_FUNCTION(heif_decode_image);
    OSPREY_FUNCTION(heif_decoding_options_alloc);
    OSPREY_FUNCTION(heif_decoding_options_free);
    OSPREY_FUNCTION(heif_image_get_bits_per_pixel_range);
    OSPREY_FUNCTION(heif_image_get_height);
    OSPREY_FUNCTION(heif_image_get_plane_readonly);
    OSPREY_FUNCTION(heif_image_get_width);
    OSPREY_FUNCTION(heif_image_handle_get_height);
    OSPREY_FUNCTION(heif_image_handle_get_list_of_metadata_block_IDs);
    OSPREY_FUNCTION(heif_image_handle_get_metadata);
    OSPREY_FUNCTION(heif_image_handle_get_metadata_content_type);
    OSPREY_FUNCTION(heif_image_handle_get_metadata_size);
    OSPREY_FUNCTION(heif_image_handle_get_metadata_type);
    OSPREY_FUNCTION(heif_image_handle_get_nclx_color_profile);
    OSPREY_FUNCTION(heif_image_handle_get_number_of_metadata_blocks);
    OSPREY_FUNCTION(heif_image_handle_get_raw_color_profile);
    OSPREY_FUNCTION(heif_image_handle_get_raw_color_profile_size);
    OSPREY_FUNCTION(heif_image_handle_get_width);
    OSPREY_FUNCTION(heif_image_handle_has_alpha_channel);
    OSPREY_FUNCTION(heif_image_handle_release);
    OSPREY_FUNCTION(heif_image_release);
    OSPREY_FUNCTION(heif_init);
    OSPREY_FUNCTION(heif_nclx_color_profile_free);
    OSPREY_FUNCTION(heif_get_version_number_major);
    OSPREY_FUNCTION(heif_get_version_number_minor);
} osprey_heif_functions;

/// The libjxl functions Osprey calls.
typedef struct {
    OSPREY_FUNCTION(JxlColorEncodingSetToSRGB);
    OSPREY_FUNCTION(JxlDecoderCloseInput);
    OSPREY_FUNCTION(JxlDecoderCreate);
    OSPREY_FUNCTION(JxlDecoderDestroy);
    OSPREY_FUNCTION(JxlDecoderFlushImage);
    OSPREY_FUNCTION(JxlDecoderGetBasicInfo);
    OSPREY_FUNCTION(JxlDecoderGetColorAsEncodedProfile);
    OSPREY_FUNCTION(JxlDecoderGetColorAsICCProfile);
    OSPREY_FUNCTION(JxlDecoderGetFrameHeader);
    OSPREY_FUNCTION(JxlDecoderGetICCProfileSize);
    OSPREY_FUNCTION(JxlDecoderImageOutBufferSize);
    OSPREY_FUNCTION(JxlDecoderProcessInput);
    OSPREY_FUNCTION(JxlDecoderReleaseJPEGBuffer);
    OSPREY_FUNCTION(JxlDecoderSetDesiredIntensityTarget);
    OSPREY_FUNCTION(JxlDecoderSetImageOutBuffer);
    OSPREY_FUNCTION(JxlDecoderSetInput);
    OSPREY_FUNCTION(JxlDecoderSetJPEGBuffer);
    OSPREY_FUNCTION(JxlDecoderSetKeepOrientation);
    OSPREY_FUNCTION(JxlDecoderSetPreferredColorProfile);
    OSPREY_FUNCTION(JxlDecoderSubscribeEvents);
    OSPREY_FUNCTION(JxlEncoderAddImageFrame);
    OSPREY_FUNCTION(JxlEncoderCloseInput);
    OSPREY_FUNCTION(JxlEncoderCreate);
    OSPREY_FUNCTION(JxlEncoderDestroy);
    OSPREY_FUNCTION(JxlEncoderFrameSettingsCreate);
    OSPREY_FUNCTION(JxlEncoderFrameSettingsSetOption);
    OSPREY_FUNCTION(JxlEncoderGetError);
    OSPREY_FUNCTION(JxlEncoderInitBasicInfo);
    OSPREY_FUNCTION(JxlEncoderInitFrameHeader);
    OSPREY_FUNCTION(JxlEncoderProcessOutput);
    OSPREY_FUNCTION(JxlEncoderSetBasicInfo);
    OSPREY_FUNCTION(JxlEncoderSetColorEncoding);
    OSPREY_FUNCTION(JxlEncoderSetFrameDistance);
    OSPREY_FUNCTION(JxlEncoderSetFrameHeader);
    OSPREY_FUNCTION(JxlEncoderSetFrameLossless);
    OSPREY_FUNCTION(JxlEncoderSetICCProfile);
    OSPREY_FUNCTION(JxlDecoderVersion);
} osprey_jxl_functions;

/// The Little CMS functions Osprey calls.
typedef struct {
    OSPREY_FUNCTION(cmsBuildGamma);
    OSPREY_FUNCTION(cmsBuildParametricToneCurve);
    OSPREY_FUNCTION(cmsCloseProfile);
    OSPREY_FUNCTION(cmsCreateContext);
    OSPREY_FUNCTION(cmsCreateGrayProfileTHR);
    OSPREY_FUNCTION(cmsCreateRGBProfileTHR);
    OSPREY_FUNCTION(cmsCreateTransformTHR);
    OSPREY_FUNCTION(cmsCreate_sRGBProfileTHR);
    OSPREY_FUNCTION(cmsD50_xyY);
    OSPREY_FUNCTION(cmsDeleteTransform);
    OSPREY_FUNCTION(cmsDoTransform);
    OSPREY_FUNCTION(cmsDoTransformLineStride);
    OSPREY_FUNCTION(cmsEvalToneCurveFloat);
    OSPREY_FUNCTION(cmsFreeToneCurve);
    OSPREY_FUNCTION(cmsGetColorSpace);
    OSPREY_FUNCTION(cmsGetProfileInfoASCII);
    OSPREY_FUNCTION(cmsIsCLUT);
    OSPREY_FUNCTION(cmsIsMatrixShaper);
    OSPREY_FUNCTION(cmsOpenProfileFromMemTHR);
    OSPREY_FUNCTION(cmsReadTag);
    OSPREY_FUNCTION(cmsSaveProfileToMem);
    OSPREY_FUNCTION(cmsSetLogErrorHandlerTHR);
} osprey_lcms_functions;

/// The SQLite functions Osprey calls.
typedef struct {
    OSPREY_FUNCTION(sqlite3_bind_blob64);
    OSPREY_FUNCTION(sqlite3_bind_double);
    OSPREY_FUNCTION(sqlite3_bind_int64);
    OSPREY_FUNCTION(sqlite3_bind_null);
    OSPREY_FUNCTION(sqlite3_bind_text);
    OSPREY_FUNCTION(sqlite3_bind_zeroblob);
    OSPREY_FUNCTION(sqlite3_busy_timeout);
    OSPREY_FUNCTION(sqlite3_clear_bindings);
    OSPREY_FUNCTION(sqlite3_close);
    OSPREY_FUNCTION(sqlite3_column_blob);
    OSPREY_FUNCTION(sqlite3_column_bytes);
    OSPREY_FUNCTION(sqlite3_column_count);
    OSPREY_FUNCTION(sqlite3_column_double);
    OSPREY_FUNCTION(sqlite3_column_int64);
    OSPREY_FUNCTION(sqlite3_column_text);
    OSPREY_FUNCTION(sqlite3_column_type);
    OSPREY_FUNCTION(sqlite3_errmsg);
    OSPREY_FUNCTION(sqlite3_exec);
    OSPREY_FUNCTION(sqlite3_finalize);
    OSPREY_FUNCTION(sqlite3_free);
    OSPREY_FUNCTION(sqlite3_libversion_number);
    OSPREY_FUNCTION(sqlite3_open_v2);
    OSPREY_FUNCTION(sqlite3_prepare_v2);
    OSPREY_FUNCTION(sqlite3_reset);
    OSPREY_FUNCTION(sqlite3_step);
} osprey_sqlite_functions;

#undef OSPREY_FUNCTION

/// libavif's functions, the library loaded on the first call (from any thread, once); NULL when it cannot be, with
/// `*reason` (when `reason` is not NULL) saying why, in a static string.
const osprey_avif_functions *_Nullable osprey_avif_functions_load(const char *_Nullable *_Nullable reason);
/// libheif's functions, as `osprey_avif_functions_load` gives libavif's; `heif_init` has been called.
const osprey_heif_functions *_Nullable osprey_heif_functions_load(const char *_Nullable *_Nullable reason);
/// libjxl's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_jxl_functions *_Nullable osprey_jxl_functions_load(const char *_Nullable *_Nullable reason);
/// Little CMS's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_lcms_functions *_Nullable osprey_lcms_functions_load(const char *_Nullable *_Nullable reason);
/// Little CMS's functions, or the stand-ins when it cannot be opened.
const osprey_lcms_functions *_Nonnull osprey_lcms_functions_or_stand_ins(void);
/// Why Little CMS could not be opened (a static message), or NULL when it was; loads it first if need be.
const char *_Nullable osprey_lcms_failure(void);
/// SQLite's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_sqlite_functions *_Nullable osprey_sqlite_functions_load(const char *_Nullable *_Nullable reason);

#endif
