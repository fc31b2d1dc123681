// The Chrome JSON reader compiled for simdjson's haswell kernels (AVX2, BMI, PCLMUL, LZCNT);
// chrome_json_reader.cc dispatches here when the CPU has them.
#define RECUR_JSON_READER_VARIANT 1
#define RECUR_JSON_READER_NS json_haswell
#include "trace/chrome_json_reader.cc"  // NOLINT(bugprone-suspicious-include)
