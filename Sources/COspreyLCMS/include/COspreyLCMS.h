// Little CMS 2: ICC profiles and colour transforms.
//
// Loaded when an image first carries a colour profile rather than when the process starts: linked, liblcms2 is one
// more shared object for every process to map and relocate, which `osprey --version`, the disk cache's commands and
// every untagged image pay for nothing. The functions Osprey calls are looked up in a table; the header's types and
// constants are used as they are. Any Little CMS 2 is accepted (its interface only grows within the major version).
//
// When liblcms2 cannot be opened the table's functions are stand-ins that make nothing (every profile, curve and
// transform comes back NULL): images decode as untagged, with a warning that says why (`osprey_lcms_failure`).
#ifndef OSPREY_LCMS_H
#define OSPREY_LCMS_H

#include <lcms2.h>

#define OSPREY_LCMS_FUNCTION(name) __typeof__(name) *_Nonnull name

/// The Little CMS functions Osprey calls.
typedef struct {
    OSPREY_LCMS_FUNCTION(cmsBuildGamma);
    OSPREY_LCMS_FUNCTION(cmsBuildParametricToneCurve);
    OSPREY_LCMS_FUNCTION(cmsCloseProfile);
    OSPREY_LCMS_FUNCTION(cmsCreateContext);
    OSPREY_LCMS_FUNCTION(cmsCreateGrayProfileTHR);
    OSPREY_LCMS_FUNCTION(cmsCreateRGBProfileTHR);
    OSPREY_LCMS_FUNCTION(cmsCreateTransformTHR);
    OSPREY_LCMS_FUNCTION(cmsCreate_sRGBProfileTHR);
    OSPREY_LCMS_FUNCTION(cmsD50_xyY);
    OSPREY_LCMS_FUNCTION(cmsDeleteTransform);
    OSPREY_LCMS_FUNCTION(cmsDoTransform);
    OSPREY_LCMS_FUNCTION(cmsDoTransformLineStride);
    OSPREY_LCMS_FUNCTION(cmsEvalToneCurveFloat);
    OSPREY_LCMS_FUNCTION(cmsFreeToneCurve);
    OSPREY_LCMS_FUNCTION(cmsGetColorSpace);
    OSPREY_LCMS_FUNCTION(cmsGetProfileInfoASCII);
    OSPREY_LCMS_FUNCTION(cmsIsCLUT);
    OSPREY_LCMS_FUNCTION(cmsIsMatrixShaper);
    OSPREY_LCMS_FUNCTION(cmsOpenProfileFromMemTHR);
    OSPREY_LCMS_FUNCTION(cmsReadTag);
    OSPREY_LCMS_FUNCTION(cmsSaveProfileToMem);
    OSPREY_LCMS_FUNCTION(cmsSetLogErrorHandlerTHR);
} osprey_lcms_functions;

/// liblcms2's table, opened on the first call (thread-safe, once per process), or the stand-ins when it cannot be.
const osprey_lcms_functions *_Nonnull osprey_lcms_functions_load(void);

/// Why liblcms2 could not be opened (a static message), or `NULL` when it was; loads it first if need be.
const char *_Nullable osprey_lcms_failure(void);

#endif
