# Unit tests of common/pki (CA, issuing, CSR signing, verification, fingerprints).
railyard_test(test_pki SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pki.c LIBS ry_pki LABELS unit)
