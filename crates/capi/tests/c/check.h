/*
 * The opening every C test shares: CHECK(cond, fmt, ...) counts one check
 * and, when cond is false, prints the line, the condition, the message and
 * detpath's last error, then exits 1; CHECK_MSG(needle) checks that the
 * last error says needle; CHECKS_DONE() prints "ok: N checks", the line
 * tests/c_abi.rs reads.
 */
#ifndef DETPATH_TESTS_CHECK_H
#define DETPATH_TESTS_CHECK_H

#include <detpath.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks;

#define CHECK(cond, ...)                                                              \
	do {                                                                          \
		checks++;                                                             \
		if (!(cond)) {                                                        \
			fprintf(stderr, "FAIL line %d: %s: ", __LINE__, #cond);       \
			fprintf(stderr, __VA_ARGS__);                                 \
			fprintf(stderr, " (last error: %s)\n", detpath_last_error()); \
			exit(1);                                                      \
		}                                                                     \
	} while (0)

#define CHECK_MSG(needle) CHECK(strstr(detpath_last_error(), needle) != NULL, "message lacks \"%s\"", needle)

#define CHECKS_DONE() printf("ok: %d checks\n", checks)

#endif
