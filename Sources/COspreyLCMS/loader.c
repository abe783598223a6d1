// Loads liblcms2 with dlopen when a colour profile is first read (see COspreyLCMS.h for why).
#include "COspreyLCMS.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

/// Looks `name` up in `handle` into `table->name`; on failure, says which function is missing.
#define LOOK_UP(name)                                                                                                  \
    do {                                                                                                               \
        void *symbol = dlsym(handle, #name);                                                                           \
        if (symbol == NULL) return "a function Osprey needs is missing from liblcms2 (" #name ")";                     \
        memcpy(&table->name, &symbol, sizeof(symbol));                                                                 \
    } while (0)

// The run-time library's name on Linux (ABI 2 since Little CMS 2.0), macOS, then the development link.
static const char *const lcms_names[] = {"liblcms2.so.2", "liblcms2.2.dylib", "liblcms2.so", NULL};

static const char *fill(void *handle, osprey_lcms_functions *table) {
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

// MARK: Stand-ins, when liblcms2 cannot be opened: nothing is made, so nothing else is ever called with what they made.

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

static osprey_lcms_functions table;
static const char *failure;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    failure = "liblcms2 is not installed (Debian and Ubuntu: liblcms2-2)";
    for (const char *const *name = lcms_names; *name != NULL; name++) {
        void *handle = dlopen(*name, RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL) continue;
        failure = fill(handle, &table);
        if (failure == NULL) return;  // kept open for the life of the process
        dlclose(handle);
    }
}

const osprey_lcms_functions *osprey_lcms_functions_load(void) {
    pthread_once(&once, load);
    return failure == NULL ? &table : &stand_ins;
}

const char *osprey_lcms_failure(void) {
    pthread_once(&once, load);
    return failure;
}
