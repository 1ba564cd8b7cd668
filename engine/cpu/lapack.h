// The LAPACK (and BLAS) routines the host code calls (OpenBLAS, which the build links, exports them). Fortran
// calling convention: every argument by pointer, matrices column-major.
#pragma once

extern "C" {
// Selected eigenpairs of a symmetric matrix.
void dsyevr_(const char* jobz, const char* range, const char* uplo, const int* n, double* a, const int* lda,
             const double* vl, const double* vu, const int* il, const int* iu, const double* abstol, int* m, double* w,
             double* z, const int* ldz, int* isuppz, double* work, const int* lwork, int* iwork, const int* liwork,
             int* info);
// Least squares through QR.
void dgels_(const char* trans, const int* m, const int* n, const int* nrhs, double* a, const int* lda, double* b,
            const int* ldb, double* work, const int* lwork, int* info);
// C = alpha * op(A) op(A)^T + beta * C on one triangle of C (BLAS).
void dsyrk_(const char* uplo, const char* trans, const int* n, const int* k, const double* alpha, const double* a,
            const int* lda, const double* beta, double* c, const int* ldc);
// Singular value decomposition (divide and conquer).
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info);
}
