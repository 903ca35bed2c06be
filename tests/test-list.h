/* test-list.h - every unit-test group, once. Files: tests/unit/test_<group>.c */
GROUP(buf)
GROUP(duration)
GROUP(frame)
GROUP(nvml)
