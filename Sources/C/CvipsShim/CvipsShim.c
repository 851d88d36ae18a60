#include "CvipsShim.h"
