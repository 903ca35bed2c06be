#include "test.h"
const struct gp_test gp_tests_amdgpu[] = {{0}};
