/*
 * C test of the Hurray C API, compiled and run by ffi/tests/c_api.rs.
 *
 *   test_hurray selftest DIR     write files with the writer API into DIR, read them back
 *   test_hurray vectors SPEC     check every compliance vector described in SPEC
 *
 * SPEC (written by the Rust harness from tests/vectors/NAME.json), one record a line:
 *   valid PATH NTENSORS NFILEMETA
 *   tensor NAMEHEX DTYPE RANK D0..Dn LAYOUT DESCONLY ELEMENTS QUANTIZED NBUF NMETA DLCODE DLBITS SPARSE QUANT
 *     SPARSE: "-" or NNZ:INDEXTYPE:CANONICAL
 *     QUANT:  "-" or SCHEME:AXIS:BLOCK:EXPRESSED:SCALE:ZEROPOINT(-):MIN:MAX
 *   buffer ROLE LEN HEX            (HEX is "-" for an empty buffer)
 *   invalid PATH STAGE VARIANT TENSORHEX
 * A dimension or ELEMENTS of "?" is dynamic/unknown.
 *
 * Ends with "N passed, N failed" and exits non-zero on any failure.
 */
#define _POSIX_C_SOURCE 200809L
#include "hurray.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ------------------------------------------------------------ selftest -- */

/* Threads share one file handle: lookups, data and DLPack exports. */
static void *reader_thread(void *arg) {
    const HurrayFile *f = arg;
    long bad = 0;
    for (int i = 0; i < 500; i++) {
        const HurrayTensor *t = NULL;
        const void *data = NULL;
        size_t len = 0;
        DLManagedTensorVersioned *dl = NULL;
        if (hurray_file_lookup(f, "w", &t) != HURRAY_OK) bad++;
        if (hurray_tensor_data(t, &data, &len) != HURRAY_OK || len != 24) bad++;
        if (hurray_tensor_to_dlpack(t, &dl) != HURRAY_OK || dl->dl_tensor.data != data) bad++;
        if (dl) dl->deleter(dl);
        /* Errors are per thread. */
        if (hurray_file_lookup(f, "missing", &t) != HURRAY_ERR_NOT_FOUND ||
            strstr(last_error(), "missing") == NULL)
            bad++;
    }
    return (void *)bad;
}

static uint8_t dtype(const char *name) {
    uint8_t code = 0;
    if (hurray_dtype_from_name(name, &code) != HURRAY_OK) {
        fprintf(stderr, "unknown dtype %s\n", name);
        exit(2);
    }
    return code;
}

/* CRC-32C (Castagnoli, reflected 0x82F63B78), bit by bit: an independent
   check of the checksums the writer records. */
static uint64_t crc32c(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

/* Per-buffer checksums (format 1.2): recorded by the writer, verified on
   demand; a flipped data byte opens fine and fails verification. `path` is
   the selftest file (w = f32 [2,3] of `values`, empty, u4, dyn). */
static void checksums(const char *dir, const char *path, const float values[6]) {
    context = "checksums";
    CHECK(crc32c((const uint8_t *)"123456789", 9) == 0xE3069283u, "crc32c check value");

    HurrayFile *f = NULL;
    const HurrayTensor *t = NULL;
    bool verified = false, present = false;
    uint64_t sum = 1;
    OK(hurray_file_open(path, &f));
    OK(hurray_file_lookup(f, "w", &t));
    OK(hurray_tensor_verify_checksum(t, &verified));
    CHECK(verified, "w verified");
    OK(hurray_tensor_checksum_at(t, 0, &sum, &present));
    const uint64_t expected = crc32c((const uint8_t *)values, 24);
    CHECK(present && sum == expected, "w checksum %" PRIx64 " vs %" PRIx64, sum, expected);
    CHECK(hurray_tensor_checksum_at(t, 1, &sum, &present) == HURRAY_ERR_OUT_OF_RANGE, "buffer 1");
    CHECK(hurray_tensor_verify_checksum(t, NULL) == HURRAY_ERR_NULL_ARGUMENT, "NULL verified");
    CHECK(hurray_tensor_verify_checksum(NULL, &verified) == HURRAY_ERR_NULL_ARGUMENT, "NULL tensor");
    OK(hurray_file_lookup(f, "empty", &t));
    OK(hurray_tensor_verify_checksum(t, &verified));
    OK(hurray_tensor_checksum_at(t, 0, &sum, &present));
    CHECK(verified && present && sum == 0, "empty: the checksum of no bytes");
    OK(hurray_file_lookup(f, "dyn", &t));
    verified = true;
    OK(hurray_tensor_verify_checksum(t, &verified));
    CHECK(!verified, "descriptor-only: nothing to verify");
    hurray_file_close(f);

    /* A copy in memory with one byte of w's values flipped. */
    FILE *in = fopen(path, "rb");
    CHECK(in != NULL, "reopen %s", path);
    if (!in) return;
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    uint8_t *bytes = malloc((size_t)size);
    CHECK(bytes && fread(bytes, 1, (size_t)size, in) == (size_t)size, "read %s", path);
    fclose(in);
    size_t at = 0;
    for (size_t i = 0; i + 24 <= (size_t)size; i++) {
        if (memcmp(bytes + i, values, 24) == 0) {
            at = i;
            break;
        }
    }
    CHECK(at != 0, "w's values found in the file");
    bytes[at + 5] ^= 0x10;
    float flipped[6];
    memcpy(flipped, bytes + at, 24);
    const uint64_t found = crc32c((const uint8_t *)flipped, 24);
    OK(hurray_file_open_bytes(bytes, (size_t)size, &f)); /* opening reads no data */
    free(bytes);
    OK(hurray_file_lookup(f, "w", &t));
    verified = true;
    CHECK(hurray_tensor_verify_checksum(t, &verified) == HURRAY_ERR_CHECKSUM_MISMATCH,
          "corrupt w fails verification");
    CHECK(verified, "out-parameter untouched on failure");
    CHECK(strcmp(last_kind(), "ChecksumMismatch") == 0, "kind %s", last_kind());
    char want_expected[32], want_found[32];
    snprintf(want_expected, sizeof want_expected, "0x%08" PRIx64, expected);
    snprintf(want_found, sizeof want_found, "0x%08" PRIx64, found);
    CHECK(strstr(last_error(), "\"w\"") && strstr(last_error(), "values") &&
              strstr(last_error(), "crc32c") && strstr(last_error(), want_expected) &&
              strstr(last_error(), want_found),
          "message names tensor, buffer and both values (%s, %s)", want_expected, want_found);
    CHECK(strcmp(hurray_status_name(HURRAY_ERR_CHECKSUM_MISMATCH), "HURRAY_ERR_CHECKSUM_MISMATCH") == 0,
          "status name");
    OK(hurray_file_lookup(f, "u4", &t));
    OK(hurray_tensor_verify_checksum(t, &verified));
    CHECK(verified, "the other tensors still verify");
    hurray_file_close(f);

    /* A file written without checksums records none: verified = false. */
    char plain[4096];
    snprintf(plain, sizeof plain, "%s/no-checksums.hurray", dir);
    HurrayWriter *w = NULL;
    const uint64_t dims_w[2] = {2, 3};
    OK(hurray_writer_create(plain, &w));
    CHECK(hurray_writer_set_checksums(w, "md5") == HURRAY_ERR_INVALID_ARGUMENT, "unknown algorithm");
    CHECK(strstr(last_error(), "md5") != NULL, "message %s", last_error());
    OK(hurray_writer_set_checksums(w, "none"));
    OK(hurray_writer_add_dense(w, "w", dtype("f32"), dims_w, 2, values, 24));
    CHECK(hurray_writer_set_checksums(w, "crc32c") == HURRAY_ERR_INVALID_ARGUMENT,
          "set after the first tensor");
    OK(hurray_writer_finish(w));
    OK(hurray_file_open(plain, &f));
    OK(hurray_file_lookup(f, "w", &t));
    verified = true;
    OK(hurray_tensor_verify_checksum(t, &verified));
    CHECK(!verified, "no checksums recorded");
    present = true;
    sum = 1;
    OK(hurray_tensor_checksum_at(t, 0, &sum, &present));
    CHECK(!present && sum == 0, "no checksum for buffer 0");
    hurray_file_close(f);
}

static void selftest(const char *dir) {
    char path[4096];
    char missing[4096];
    snprintf(path, sizeof path, "%s/selftest.hurray", dir);
    snprintf(missing, sizeof missing, "%s/does-not-exist.hurray", dir);
    context = "selftest";

    /* Write: a 2x3 f32, an empty [3,0,5] f32 (NULL data, length 0), a u4 of
       3 packed elements, a descriptor-only tensor with a dynamic dimension. */
    HurrayWriter *w = NULL;
    OK(hurray_writer_create(path, &w));
    const float values[6] = {1, 2, 3, 4, 5, 6};
    const uint64_t dims_w[2] = {2, 3};
    OK(hurray_writer_add_dense(w, "w", dtype("f32"), dims_w, 2, values, sizeof values));
    const uint64_t dims_empty[3] = {3, 0, 5};
    OK(hurray_writer_add_dense(w, "empty", dtype("f32"), dims_empty, 3, NULL, 0));
    const uint8_t packed[2] = {0x21, 0x03};
    const uint64_t dims_u4[1] = {3};
    OK(hurray_writer_add_dense(w, "u4", dtype("u4"), dims_u4, 1, packed, 2));
    const uint64_t dims_dyn[2] = {HURRAY_DYNAMIC_DIM, 4};
    OK(hurray_writer_add_descriptor(w, "dyn", dtype("bf16"), dims_dyn, 2));
    OK(hurray_writer_set_metadata(w, "producer", "test_hurray.c"));

    /* Bad arguments are refused, the writer stays usable. */
    CHECK(hurray_writer_add_dense(w, "short", dtype("f32"), dims_w, 2, values, 8) ==
              HURRAY_ERR_INVALID_ARGUMENT, "short data");
    CHECK(strcmp(last_kind(), "BufferLength") == 0, "kind %s", last_kind());
    CHECK(hurray_writer_add_dense(w, "w", dtype("f32"), dims_w, 2, values, sizeof values) ==
              HURRAY_ERR_INVALID_ARGUMENT, "duplicate name");
    CHECK(strcmp(last_kind(), "DuplicateName") == 0, "kind %s", last_kind());
    CHECK(hurray_writer_add_dense(w, "d", dtype("f32"), dims_dyn, 2, NULL, 0) ==
              HURRAY_ERR_INVALID_ARGUMENT, "dynamic dim with data");
    CHECK(hurray_writer_add_dense(w, "x", 0, dims_w, 2, values, sizeof values) ==
              HURRAY_ERR_INVALID_ARGUMENT, "dtype 0");
    CHECK(hurray_writer_add_dense(w, "x", dtype("f32"), dims_w, 2, NULL, 24) ==
              HURRAY_ERR_NULL_ARGUMENT, "NULL data with a length");
    CHECK(hurray_writer_add_dense(NULL, "x", dtype("f32"), dims_w, 2, values, 24) ==
              HURRAY_ERR_NULL_ARGUMENT, "NULL writer");
    CHECK(hurray_last_error_message() != NULL && strstr(last_error(), "writer") != NULL,
          "message names the argument: %s", last_error());
    OK(hurray_writer_finish(w));

    /* An aborted writer leaves nothing behind. */
    char aborted[4096];
    snprintf(aborted, sizeof aborted, "%s/aborted.hurray", dir);
    HurrayWriter *w2 = NULL;
    OK(hurray_writer_create(aborted, &w2));
    OK(hurray_writer_add_dense(w2, "w", dtype("f32"), dims_w, 2, values, sizeof values));
    hurray_writer_abort(w2);
    FILE *probe = fopen(aborted, "rb");
    CHECK(probe == NULL, "aborted file exists");
    if (probe) fclose(probe);

    /* Errors: a missing file, NULL arguments. */
    HurrayFile *f = NULL;
    CHECK(hurray_file_open(missing, &f) == HURRAY_ERR_IO, "missing file");
    CHECK(strstr(last_error(), "does-not-exist") != NULL, "message: %s", last_error());
    CHECK(hurray_file_open(NULL, &f) == HURRAY_ERR_NULL_ARGUMENT, "NULL path");
    CHECK(hurray_file_open(path, NULL) == HURRAY_ERR_NULL_ARGUMENT, "NULL out");
    hurray_file_close(NULL);

    OK(hurray_file_open(path, &f));
    size_t n = 0;
    OK(hurray_file_count(f, &n));
    CHECK(n == 4, "count %zu", n);
    const HurrayTensor *t = NULL;
    CHECK(hurray_file_tensor_at(f, 4, &t) == HURRAY_ERR_OUT_OF_RANGE, "index 4");
    CHECK(hurray_file_lookup(f, "nope", &t) == HURRAY_ERR_NOT_FOUND, "lookup nope");
    CHECK(strcmp(last_kind(), "NotFound") == 0, "kind %s", last_kind());
    CHECK(strstr(last_error(), "nope") != NULL, "message %s", last_error());

    /* Names come sorted: dyn, empty, u4, w. */
    const char *name = NULL;
    size_t name_len = 0;
    OK(hurray_file_tensor_at(f, 0, &t));
    OK(hurray_tensor_name(t, &name, &name_len));
    CHECK(strcmp(name, "dyn") == 0 && name_len == 3, "first name %s", name);

    /* w: data points into the file; DLPack export shares it. */
    OK(hurray_file_lookup(f, "w", &t));
    const void *data = NULL;
    size_t len = 0;
    OK(hurray_tensor_data(t, &data, &len));
    CHECK(data != NULL && len == 24 && memcmp(data, values, 24) == 0, "w data");
    CHECK(((uintptr_t)data) % 64 == 0, "w data 64-byte aligned");
    DLManagedTensorVersioned *dl = NULL;
    OK(hurray_tensor_to_dlpack(t, &dl));

    /* empty [3,0,5]: NULL and 0 (ADR-007), both from data() and from DLPack. */
    OK(hurray_file_lookup(f, "empty", &t));
    data = (const void *)1;
    len = 99;
    OK(hurray_tensor_data(t, &data, &len));
    CHECK(data == NULL && len == 0, "empty data %p %zu", data, len);
    size_t rank = 0;
    const uint64_t *dims = NULL;
    OK(hurray_tensor_rank(t, &rank));
    OK(hurray_tensor_dims(t, &dims));
    CHECK(rank == 3 && dims[0] == 3 && dims[1] == 0 && dims[2] == 5, "empty dims");
    uint64_t count = 7;
    bool known = false;
    OK(hurray_tensor_element_count(t, &count, &known));
    CHECK(known && count == 0, "empty count");
    uint64_t bytes = 1;
    OK(hurray_tensor_byte_length(t, &bytes));
    CHECK(bytes == 0, "empty byte length");
    DLManagedTensorVersioned *dl_empty = NULL;
    OK(hurray_tensor_to_dlpack(t, &dl_empty));
    CHECK(dl_empty->dl_tensor.data == NULL, "empty DLPack data is NULL");
    CHECK(dl_empty->dl_tensor.ndim == 3 && dl_empty->dl_tensor.shape[1] == 0, "empty DLPack shape");

    /* dyn: the sentinel, distinct from 0; descriptor-only has no data. */
    OK(hurray_file_lookup(f, "dyn", &t));
    OK(hurray_tensor_dims(t, &dims));
    CHECK(dims[0] == HURRAY_DYNAMIC_DIM && dims[0] != 0 && dims[1] == 4, "dyn dims");
    OK(hurray_tensor_element_count(t, &count, &known));
    CHECK(!known, "dyn count unknown");
    bool desc_only = false;
    OK(hurray_tensor_descriptor_only(t, &desc_only));
    CHECK(desc_only, "dyn descriptor-only");
    CHECK(hurray_tensor_data(t, &data, &len) == HURRAY_ERR_NO_DATA, "dyn data");
    CHECK(strcmp(last_kind(), "NoData") == 0, "kind %s", last_kind());
    DLManagedTensorVersioned *dl_dyn = NULL;
    CHECK(hurray_tensor_to_dlpack(t, &dl_dyn) == HURRAY_ERR_NO_DATA && dl_dyn == NULL, "dyn DLPack");

    /* u4: packed sub-byte DLPack export. */
    OK(hurray_file_lookup(f, "u4", &t));
    uint8_t code = 0;
    OK(hurray_tensor_dtype(t, &code));
    CHECK(strcmp(hurray_dtype_name(code), "u4") == 0 && hurray_dtype_bits(code) == 4, "u4 dtype");
    DLManagedTensorVersioned *dl_u4 = NULL;
    OK(hurray_tensor_to_dlpack(t, &dl_u4));
    CHECK(dl_u4->dl_tensor.dtype.code == 1 && dl_u4->dl_tensor.dtype.bits == 4 &&
              dl_u4->dl_tensor.dtype.lanes == 1, "u4 DLPack dtype");
    CHECK((dl_u4->flags & HURRAY_DLPACK_FLAG_SUBBYTE_PADDED) == 0, "u4 packed");
    CHECK(((const uint8_t *)dl_u4->dl_tensor.data)[0] == 0x21, "u4 bytes");

    size_t meta = 0;
    OK(hurray_file_metadata_count(f, &meta));
    CHECK(meta == 1, "file metadata");

    pthread_t threads[4];
    for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, reader_thread, f);
    for (int i = 0; i < 4; i++) {
        void *bad = NULL;
        pthread_join(threads[i], &bad);
        CHECK(bad == NULL, "thread %d: %ld failures", i, (long)bad);
    }

    /* Close the file: the exports keep the mapping alive until their deleters. */
    hurray_file_close(f);
    CHECK(dl->version.major == 1 && dl->version.minor == HURRAY_DLPACK_MINOR_VERSION, "DLPack version");
    CHECK((dl->flags & HURRAY_DLPACK_FLAG_READ_ONLY) != 0, "read-only flag");
    CHECK(dl->dl_tensor.device.device_type == HURRAY_DLPACK_CPU && dl->dl_tensor.device.device_id == 0,
          "CPU device");
    CHECK(dl->dl_tensor.dtype.code == 2 && dl->dl_tensor.dtype.bits == 32, "f32 DLPack dtype");
    CHECK(dl->dl_tensor.ndim == 2 && dl->dl_tensor.shape[0] == 2 && dl->dl_tensor.shape[1] == 3,
          "DLPack shape");
    CHECK(dl->dl_tensor.strides[0] == 3 && dl->dl_tensor.strides[1] == 1, "DLPack strides");
    CHECK(dl->dl_tensor.byte_offset == 0, "byte offset");
    const float *fl = (const float *)dl->dl_tensor.data;
    CHECK(fl[0] == 1.0f && fl[5] == 6.0f, "DLPack data readable after close");
    dl->deleter(dl);
    dl_empty->deleter(dl_empty);
    dl_u4->deleter(dl_u4);

    checksums(dir, path, values);
    context = "selftest";

    /* Invalid input: not a Hurray file. */
    static const uint8_t junk[200] = {1, 2, 3};
    CHECK(hurray_file_open_bytes(junk, sizeof junk, &f) == HURRAY_ERR_INVALID_FILE, "junk");
    CHECK(strcmp(last_kind(), "BadMagic") == 0, "kind %s", last_kind());
    CHECK(strstr(last_error(), "magic") != NULL, "message %s", last_error());
    CHECK(strcmp(hurray_status_name(HURRAY_ERR_INVALID_FILE), "HURRAY_ERR_INVALID_FILE") == 0 &&
              strcmp(hurray_status_name(12345), "HURRAY_ERR_UNKNOWN") == 0,
          "status name");
}

/* ------------------------------------------------------------- vectors -- */

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes HEX ("-" is empty) into a malloc'd buffer; returns its length. */
static size_t unhex(const char *hex, uint8_t **out) {
    if (strcmp(hex, "-") == 0) {
        *out = NULL;
        return 0;
    }
    size_t n = strlen(hex) / 2;
    *out = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        (*out)[i] = (uint8_t)(hexval(hex[2 * i]) * 16 + hexval(hex[2 * i + 1]));
    }
    (*out)[n] = 0;
    return n;
}

static char *next_tok(void) { return strtok(NULL, " \n"); }

static int layout_of(const char *name) {
    for (uint32_t i = 0; i < 5; i++) {
        if (strcmp(hurray_layout_name(i), name) == 0) return (int)i;
    }
    return -1;
}

static void check_tensor(const HurrayFile *f, size_t index, FILE *spec, char *line) {
    /* tensor NAMEHEX DTYPE RANK D... LAYOUT DESCONLY ELEMENTS QUANTIZED NBUF NMETA DLCODE DLBITS */
    strtok(line, " \n");
    uint8_t *want_name = NULL;
    size_t want_name_len = unhex(next_tok(), &want_name);
    const char *want_dtype = next_tok();
    size_t want_rank = strtoull(next_tok(), NULL, 10);
    uint64_t want_dims[64];
    for (size_t i = 0; i < want_rank && i < 64; i++) {
        const char *d = next_tok();
        want_dims[i] = strcmp(d, "?") == 0 ? HURRAY_DYNAMIC_DIM : strtoull(d, NULL, 10);
    }
    int want_layout = layout_of(next_tok());
    bool want_desc_only = strcmp(next_tok(), "1") == 0;
    const char *el = next_tok();
    bool want_known = strcmp(el, "?") != 0;
    uint64_t want_elements = want_known ? strtoull(el, NULL, 10) : 0;
    bool want_quantized = strcmp(next_tok(), "1") == 0;
    size_t want_nbuf = strtoull(next_tok(), NULL, 10);
    size_t want_nmeta = strtoull(next_tok(), NULL, 10);
    int want_dlcode = atoi(next_tok());
    int want_dlbits = atoi(next_tok());
    char want_sparse[256], want_quant[512];
    snprintf(want_sparse, sizeof want_sparse, "%s", next_tok());
    snprintf(want_quant, sizeof want_quant, "%s", next_tok());

    const HurrayTensor *t = NULL;
    OK(hurray_file_tensor_at(f, index, &t));
    if (!t) return;
    const char *name = NULL;
    size_t name_len = 0;
    OK(hurray_tensor_name(t, &name, &name_len));
    CHECK(name_len == want_name_len && memcmp(name, want_name, name_len) == 0, "name");
    if (memchr(want_name, 0, want_name_len) == NULL) {
        const HurrayTensor *by_name = NULL;
        OK(hurray_file_lookup(f, (const char *)want_name, &by_name));
        CHECK(by_name == t, "lookup by name gives the same tensor");
    }
    uint8_t code = 0;
    OK(hurray_tensor_dtype(t, &code));
    CHECK(strcmp(hurray_dtype_name(code), want_dtype) == 0, "dtype %s", hurray_dtype_name(code));
    size_t rank = 0;
    const uint64_t *dims = NULL;
    OK(hurray_tensor_rank(t, &rank));
    OK(hurray_tensor_dims(t, &dims));
    CHECK(rank == want_rank, "rank %zu", rank);
    CHECK(dims != NULL, "dims not NULL");
    for (size_t i = 0; i < rank && i < want_rank && dims; i++) {
        CHECK(dims[i] == want_dims[i], "dim %zu = %" PRIu64, i, dims[i]);
    }
    HurrayLayout layout;
    OK(hurray_tensor_layout(t, &layout));
    CHECK((int)layout == want_layout, "layout %d", (int)layout);
    bool desc_only = false;
    OK(hurray_tensor_descriptor_only(t, &desc_only));
    CHECK(desc_only == want_desc_only, "descriptor_only");
    uint64_t elements = 0;
    bool known = false;
    OK(hurray_tensor_element_count(t, &elements, &known));
    CHECK(known == want_known && elements == want_elements, "element count");
    bool quantized = false;
    OK(hurray_tensor_quantized(t, &quantized));
    CHECK(quantized == want_quantized, "quantized");
    OK(hurray_tensor_check(t));

    uint64_t nnz = 0;
    uint8_t index_type = 0;
    bool canonical = false;
    HurrayStatus ss = hurray_tensor_sparse(t, &nnz, &index_type, &canonical);
    if (strcmp(want_sparse, "-") == 0) {
        CHECK(ss == HURRAY_ERR_UNSUPPORTED, "sparse params of a dense tensor: %s", hurray_status_name(ss));
    } else {
        char got[256];
        OK(ss);
        snprintf(got, sizeof got, "%" PRIu64 ":%s:%d", nnz, hurray_dtype_name(index_type), canonical ? 1 : 0);
        CHECK(strcmp(got, want_sparse) == 0, "sparse %s, expected %s", got, want_sparse);
    }
    HurrayQuantization q;
    bool has_q = false;
    OK(hurray_tensor_quantization(t, &q, &has_q));
    CHECK(has_q == (strcmp(want_quant, "-") != 0), "quantization present");
    if (has_q) {
        static const char *schemes[] = {"?", "per_tensor", "per_axis", "per_block", "per_flat_block"};
        char got[512];
        uint64_t tensor_scale_bits;
        memcpy(&tensor_scale_bits, &q.tensor_scale, sizeof tensor_scale_bits);
        snprintf(got, sizeof got, "%s:%u:%" PRIu64 ":%s:%s:%s:%" PRId64 ":%" PRId64 ":%016" PRIx64 ":%s",
                 schemes[q.scheme <= 4 ? q.scheme : 0], q.axis, q.block_size,
                 hurray_dtype_name(q.expressed_type), hurray_dtype_name(q.scale_type),
                 q.zero_point_type ? hurray_dtype_name(q.zero_point_type) : "-", q.storage_min,
                 q.storage_max, tensor_scale_bits,
                 q.offset_type ? hurray_dtype_name(q.offset_type) : "-");
        CHECK(strcmp(got, want_quant) == 0, "quantization %s, expected %s", got, want_quant);
    }

    size_t nbuf = 0;
    OK(hurray_tensor_buffer_count(t, &nbuf));
    CHECK(nbuf == want_nbuf, "buffer count %zu", nbuf);
    uint64_t total = 0;
    const void *values = NULL;
    size_t values_len = 0;
    char buf_line[1 << 16];
    for (size_t i = 0; i < want_nbuf; i++) {
        char *bl = NULL;
        size_t cap = 0;
        if (getline(&bl, &cap, spec) < 0) {
            CHECK(0, "spec truncated");
            free(bl);
            return;
        }
        strtok(bl, " \n");
        snprintf(buf_line, sizeof buf_line, "%s", next_tok());
        size_t want_len = strtoull(next_tok(), NULL, 10);
        uint8_t *want = NULL;
        size_t got_hex = unhex(next_tok(), &want);
        const char *role = NULL;
        const void *data = (const void *)1;
        size_t len = 99;
        if (i < nbuf) {
            OK(hurray_tensor_buffer_at(t, i, &role, &data, &len));
            CHECK(role && strcmp(role, buf_line) == 0, "buffer %zu role %s", i, role);
            CHECK(len == want_len && got_hex == want_len, "buffer %s length %zu", buf_line, len);
            if (len == 0) {
                CHECK(data == NULL, "zero-length buffer %s is NULL (ADR-007)", buf_line);
            } else {
                CHECK(data != NULL && memcmp(data, want, len) == 0, "buffer %s bytes", buf_line);
                CHECK(((uintptr_t)data) % 64 == 0, "buffer %s 64-byte aligned", buf_line);
            }
            if (strcmp(buf_line, "values") == 0) {
                values = data;
                values_len = len;
            }
        }
        total += want_len;
        free(want);
        free(bl);
    }
    uint64_t byte_length = 0;
    OK(hurray_tensor_byte_length(t, &byte_length));
    CHECK(byte_length == total, "byte length %" PRIu64, byte_length);

    if (quantized && !desc_only) {
        /* The runtime's dequantization, through the C API, against the
           expectation: f32 bits in hex, or "nan". */
        char *dl = NULL;
        size_t dcap = 0;
        if (getline(&dl, &dcap, spec) < 0) {
            CHECK(0, "spec truncated (dequantized)");
        } else {
            strtok(dl, " \n");
            size_t n = strtoull(next_tok(), NULL, 10);
            float *got = calloc(n + 1, sizeof *got);
            size_t written = 0;
            OK(hurray_tensor_dequantize(t, 0, got, n + 1, &written));
            CHECK(written == n, "dequantized %zu values, expected %zu", written, n);
            for (size_t i = 0; i < n && i < written; i++) {
                const char *tok = next_tok();
                uint32_t bits;
                memcpy(&bits, &got[i], sizeof bits);
                if (strcmp(tok, "nan") == 0) {
                    CHECK(got[i] != got[i], "dequantized[%zu] is NaN", i);
                } else {
                    CHECK(bits == (uint32_t)strtoul(tok, NULL, 16), "dequantized[%zu] bits %08x, expected %s", i, bits, tok);
                }
            }
            /* From the middle, into a short buffer: the same values. */
            if (n > 2) {
                float two[2];
                OK(hurray_tensor_dequantize(t, n - 2, two, 2, &written));
                CHECK(written == 2 && memcmp(two, &got[n - 2], sizeof two) == 0, "dequantized tail");
            }
            free(got);
        }
        free(dl);
    }

    const void *data = (const void *)1;
    size_t len = 99;
    HurrayStatus s = hurray_tensor_data(t, &data, &len);
    bool dense = want_layout == HURRAY_LAYOUT_DENSE || want_layout == HURRAY_LAYOUT_STRIDED;
    if (desc_only) {
        CHECK(s == HURRAY_ERR_NO_DATA, "data of descriptor-only: %s", hurray_status_name(s));
    } else if (!dense) {
        CHECK(s == HURRAY_ERR_UNSUPPORTED, "data of sparse: %s", hurray_status_name(s));
    } else {
        CHECK(s == HURRAY_OK, "data: %s", hurray_status_name(s));
        CHECK(data == values && len == values_len, "data is the values buffer");
        CHECK((data == NULL) == (len == 0), "NULL iff length 0 (ADR-007)");
    }

    DLManagedTensorVersioned *dl = NULL;
    s = hurray_tensor_to_dlpack(t, &dl);
    if (desc_only) {
        CHECK(s == HURRAY_ERR_NO_DATA, "DLPack of descriptor-only: %s", hurray_status_name(s));
    } else if (!dense || quantized) {
        CHECK(s == HURRAY_ERR_UNSUPPORTED, "DLPack of sparse/quantized: %s", hurray_status_name(s));
    } else {
        CHECK(s == HURRAY_OK && dl != NULL, "DLPack export: %s", hurray_status_name(s));
        if (dl) {
            CHECK(dl->version.major == HURRAY_DLPACK_MAJOR_VERSION, "DLPack major");
            /* Bools (kDLBool) leave one byte each: an unpacked copy (of
               nothing, for an empty tensor: NULL, read-only as the rest). */
            bool byte_bools = want_dlcode == 6;
            if (byte_bools && want_elements > 0) {
                CHECK(dl->flags == HURRAY_DLPACK_FLAG_IS_COPIED, "bools: copied, flags %" PRIu64, dl->flags);
            } else {
                CHECK((dl->flags & HURRAY_DLPACK_FLAG_READ_ONLY) != 0, "read-only");
            }
            int dlbits = byte_bools ? 8 : want_dlbits;
            CHECK(dl->dl_tensor.dtype.code == want_dlcode && dl->dl_tensor.dtype.bits == dlbits &&
                      dl->dl_tensor.dtype.lanes == 1,
                  "DLPack dtype %d/%d", dl->dl_tensor.dtype.code, dl->dl_tensor.dtype.bits);
            CHECK((size_t)dl->dl_tensor.ndim == want_rank, "DLPack ndim");
            CHECK(dl->dl_tensor.shape != NULL && dl->dl_tensor.strides != NULL, "shape/strides set");
            for (size_t i = 0; i < want_rank; i++) {
                CHECK((uint64_t)dl->dl_tensor.shape[i] == want_dims[i], "DLPack dim %zu", i);
            }
            if (want_elements == 0) {
                CHECK(dl->dl_tensor.data == NULL, "empty tensor exports NULL (ADR-007)");
            } else if (byte_bools) {
                const uint8_t *bytes = dl->dl_tensor.data;
                const uint8_t *bits = values;
                CHECK(bytes != NULL && dl->dl_tensor.data != values, "bools: a copy");
                for (uint64_t i = 0; bytes && i < want_elements; i++) {
                    CHECK(bytes[i] == ((bits[i / 8] >> (i % 8)) & 1), "bool %" PRIu64 " unpacked", i);
                }
            } else {
                CHECK(dl->dl_tensor.data == values, "DLPack data is the values buffer");
            }
            dl->deleter(dl);
        }
    }

    size_t nmeta = 0;
    OK(hurray_tensor_metadata_count(t, &nmeta));
    CHECK(nmeta == want_nmeta, "tensor metadata count %zu", nmeta);
    free(want_name);
}

static void vectors(const char *spec_path) {
    FILE *spec = fopen(spec_path, "r");
    if (!spec) {
        perror(spec_path);
        exit(2);
    }
    char *line = NULL;
    size_t cap = 0;
    int valid = 0, invalid = 0;
    static char ctx[4096];
    while (getline(&line, &cap, spec) >= 0) {
        char *kind = strtok(line, " \n");
        if (!kind) continue;
        if (strcmp(kind, "valid") == 0) {
            valid++;
            const char *path = next_tok();
            snprintf(ctx, sizeof ctx, "%s", path);
            context = ctx;
            size_t want_n = strtoull(next_tok(), NULL, 10);
            size_t want_meta = strtoull(next_tok(), NULL, 10);
            HurrayFile *f = NULL;
            OK(hurray_file_open(path, &f));
            size_t n = 0;
            OK(hurray_file_count(f, &n));
            CHECK(n == want_n, "count %zu", n);
            size_t meta = 0;
            OK(hurray_file_metadata_count(f, &meta));
            CHECK(meta == want_meta, "file metadata %zu", meta);
            for (size_t i = 0; i < want_n; i++) {
                if (getline(&line, &cap, spec) < 0) break;
                if (f) check_tensor(f, i, spec, line);
            }
            hurray_file_close(f);
        } else if (strcmp(kind, "invalid") == 0) {
            invalid++;
            const char *path = next_tok();
            snprintf(ctx, sizeof ctx, "%s", path);
            context = ctx;
            const char *stage = next_tok();
            char variant[256];
            snprintf(variant, sizeof variant, "%s", next_tok());
            uint8_t *tensor = NULL;
            unhex(next_tok(), &tensor);
            HurrayFile *f = NULL;
            HurrayStatus s = hurray_file_open(path, &f);
            if (strcmp(stage, "open") == 0) {
                CHECK(s == HURRAY_ERR_INVALID_FILE && f == NULL, "rejected at open: %s",
                      hurray_status_name(s));
                CHECK(strcmp(last_kind(), variant) == 0, "kind %s, expected %s", last_kind(), variant);
            } else {
                OK(s);
                const HurrayTensor *t = NULL;
                OK(hurray_file_lookup(f, tensor ? (const char *)tensor : "", &t));
                s = hurray_tensor_check(t);
                CHECK(s == HURRAY_ERR_INVALID_FILE, "rejected by check: %s", hurray_status_name(s));
                CHECK(strcmp(last_kind(), variant) == 0, "kind %s, expected %s", last_kind(), variant);
                hurray_file_close(f);
            }
            free(tensor);
        }
    }
    free(line);
    fclose(spec);
    context = "vectors";
    CHECK(valid > 0 && invalid > 0, "valid %d invalid %d", valid, invalid);
    printf("vectors: %d valid, %d invalid\n", valid, invalid);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s selftest DIR | vectors SPEC\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "selftest") == 0) {
        selftest(argv[2]);
    } else if (strcmp(argv[1], "vectors") == 0) {
        vectors(argv[2]);
    } else {
        return 2;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
