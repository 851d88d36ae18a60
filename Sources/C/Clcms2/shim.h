#include <lcms2.h>

// lcms2's pixel-format constants are macro expressions, which Swift does not import.
static const cmsUInt32Number clcms2_type_rgb_8 = TYPE_RGB_8;
