// Little CMS 2: ICC profiles and colour transforms.
#include <lcms2.h>
