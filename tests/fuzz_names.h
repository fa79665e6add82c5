/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_names.h - the fuzz target, shared by the libFuzzer build and the
 * corpus replay test. */
#ifndef FUZZ_NAMES_H
#define FUZZ_NAMES_H

#include <stddef.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
/* The second validator: 1 when name[0..n) is a valid lock name. */
int fuzz_reference_valid(const char *name, size_t n);

#endif
