// Which sanitizer this translation unit is compiled under, asked the same way of both compilers.
// GCC says so with __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__; clang 14 (the ASan + UBSan
// build's compiler) defines neither and answers only __has_feature. Testing GCC's macros alone
// once made a clang ASan run take the plain build's 200 training steps instead of 50.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define POSEIDON_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POSEIDON_UNDER_ASAN 1
#endif
#endif
#ifndef POSEIDON_UNDER_ASAN
#define POSEIDON_UNDER_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define POSEIDON_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define POSEIDON_UNDER_TSAN 1
#endif
#endif
#ifndef POSEIDON_UNDER_TSAN
#define POSEIDON_UNDER_TSAN 0
#endif
