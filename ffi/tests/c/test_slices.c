/*
 * C test of slices and sharded checkpoints through the Hurray C API,
 * compiled and run by ffi/tests/c_api.rs.
 *
 *   test_slices DIR
 *
 * Writes DIR/plain.hurray itself (writer API) and slices its tensors: f32,
 * packed u4, packed bool, a scalar. Reads DIR/ckpt/model.hurray, a sharded
 * checkpoint the Rust harness wrote (ShardedWriter):
 *   w  f32 [10, 7], w[i] = i - 20 (row-major i), chunked by rows 0..3, 3..7
 *      and 7..10 in rank-0.hurray, rank-1.hurray and rank-2.hurray;
 *   q  i4 [4, 6], code[i] = (5 i) mod 16, chunked by columns 0..3 (rank-0)
 *      and 3..6 (rank-1);
 *   b  f32 [2] = {0.5, 1.5}, whole, in rank-2;
 *   metadata format = pt.
 * Every slice is compared with a reference computed here from those
 * formulas, element by element (sub-byte codes unpacked here, bit by bit).
 * Then it corrupts and truncates rank-1.hurray and checks the errors.
 *
 * Ends with "N passed, N failed" and exits non-zero on any failure.
 */
#define _POSIX_C_SOURCE 200809L
#include "hurray.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct {
    uint64_t start, stop, step;
} Range;

#define MAX_RANK 8
#define MAX_ELEMENTS 4096

static uint8_t dtype(const char *name) {
    uint8_t code = 0;
    if (hurray_dtype_from_name(name, &code) != HURRAY_OK) {
        fprintf(stderr, "unknown dtype %s\n", name);
        exit(2);
    }
    return code;
}

static uint64_t len_of(Range r) { return r.stop <= r.start ? 0 : (r.stop - r.start - 1) / r.step + 1; }

/* Element i of an LSB-first stream of `bits`-bit codes. */
static unsigned code_at(const uint8_t *bytes, unsigned bits, uint64_t i) {
    unsigned code = 0;
    for (unsigned k = 0; k < bits; k++) {
        uint64_t bit = i * bits + k;
        code |= (unsigned)((bytes[bit / 8] >> (bit % 8)) & 1u) << k;
    }
    return code;
}

/* Packs n codes LSB-first into out (zeroed here), ceil(n * bits / 8) bytes. */
static size_t pack(const uint8_t *codes, size_t n, unsigned bits, uint8_t *out) {
    size_t len = (n * bits + 7) / 8;
    memset(out, 0, len);
    for (size_t i = 0; i < n; i++) {
        for (unsigned k = 0; k < bits; k++) {
            uint64_t bit = (uint64_t)i * bits + k;
            out[bit / 8] |= (uint8_t)(((codes[i] >> k) & 1u) << (bit % 8));
        }
    }
    return len;
}

/* The flat row-major indices of full[r], in the slice's order; the count. */
static size_t reference(const uint64_t *dims, size_t rank, const Range *r, uint64_t *out) {
    size_t total = 1;
    for (size_t d = 0; d < rank; d++) total *= (size_t)len_of(r[d]);
    if (total > MAX_ELEMENTS) {
        fprintf(stderr, "reference: slice too large\n");
        exit(2);
    }
    for (size_t n = 0; n < total; n++) {
        size_t rest = n;
        uint64_t flat = 0, stride = 1;
        for (size_t d = rank; d-- > 0;) {
            uint64_t count = len_of(r[d]);
            uint64_t k = rest % count;
            rest /= count;
            flat += (r[d].start + k * r[d].step) * stride;
            stride *= dims[d];
        }
        out[n] = flat;
    }
    return total;
}

/* Checks that `s` is full[r] for a tensor of `dims` whose stored bytes are
   `full` (`bits` per element, packed below 8), then frees `s`. */
static void check_slice(const char *what, HurraySlice *s, uint8_t want_dtype, const uint64_t *dims,
                        size_t rank, const Range *r, const uint8_t *full, unsigned bits) {
    context = what;
    CHECK(s != NULL, "a slice");
    if (!s) return;
    uint8_t code = 0;
    size_t got_rank = 99;
    const uint64_t *got_dims = NULL;
    const void *data = (const void *)1;
    size_t len = 99;
    OK(hurray_slice_dtype(s, &code));
    OK(hurray_slice_rank(s, &got_rank));
    OK(hurray_slice_dims(s, &got_dims));
    OK(hurray_slice_data(s, &data, &len));
    CHECK(code == want_dtype, "dtype %s", hurray_dtype_name(code));
    CHECK(got_rank == rank && got_dims != NULL, "rank %zu", got_rank);
    for (size_t d = 0; d < rank && d < got_rank && got_dims; d++) {
        CHECK(got_dims[d] == len_of(r[d]), "dim %zu = %" PRIu64 ", expected %" PRIu64, d, got_dims[d],
              len_of(r[d]));
    }
    static uint64_t idx[MAX_ELEMENTS];
    size_t total = reference(dims, rank, r, idx);
    size_t want_len = bits >= 8 ? total * (bits / 8) : (total * bits + 7) / 8;
    CHECK(len == want_len, "%zu bytes, expected %zu", len, want_len);
    CHECK((data == NULL) == (len == 0), "NULL iff empty (ADR-007)");
    if (len != want_len || data == NULL) {
        hurray_slice_free(s);
        return;
    }
    const uint8_t *got = data;
    size_t wrong = 0;
    for (size_t n = 0; n < total; n++) {
        if (bits >= 8) {
            size_t size = bits / 8;
            if (memcmp(got + n * size, full + idx[n] * size, size) != 0) wrong++;
        } else if (code_at(got, bits, n) != code_at(full, bits, idx[n])) {
            wrong++;
        }
    }
    CHECK(wrong == 0, "%zu of %zu elements differ", wrong, total);
    if (bits < 8 && total * bits % 8 != 0) {
        unsigned used = (unsigned)(total * bits % 8);
        CHECK((got[len - 1] >> used) == 0, "padding bits are zero");
    }
    hurray_slice_free(s);
}

static HurrayStatus tensor_slice(const HurrayTensor *t, const Range *r, size_t rank, HurraySlice **out) {
    uint64_t starts[MAX_RANK], stops[MAX_RANK], steps[MAX_RANK];
    for (size_t d = 0; d < rank; d++) {
        starts[d] = r[d].start;
        stops[d] = r[d].stop;
        steps[d] = r[d].step;
    }
    return hurray_tensor_read_slice(t, starts, stops, steps, rank, out);
}

static HurrayStatus sharded_slice(const HurraySharded *h, const char *name, const Range *r, size_t rank,
                                  HurraySlice **out) {
    uint64_t starts[MAX_RANK], stops[MAX_RANK], steps[MAX_RANK];
    for (size_t d = 0; d < rank; d++) {
        starts[d] = r[d].start;
        stops[d] = r[d].stop;
        steps[d] = r[d].step;
    }
    return hurray_sharded_read_slice(h, name, starts, stops, steps, rank, out);
}

/* ------------------------------------------------------- one file -- */

static void plain(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/plain.hurray", dir);
    context = "plain: write";
    static float x[120];
    for (int i = 0; i < 120; i++) x[i] = (float)i * 0.5f;
    uint8_t n_codes[35], n_packed[18], m_codes[33], m_packed[5];
    for (int i = 0; i < 35; i++) n_codes[i] = (uint8_t)((i * 7 + 3) % 16);
    for (int i = 0; i < 33; i++) m_codes[i] = (uint8_t)(i % 3 == 0 || i % 7 == 1);
    size_t n_len = pack(n_codes, 35, 4, n_packed);
    size_t m_len = pack(m_codes, 33, 1, m_packed);
    const double scalar = 2.5;
    const uint64_t dims_x[3] = {4, 5, 6}, dims_n[2] = {5, 7}, dims_m[2] = {3, 11};
    const uint64_t dims_d[2] = {HURRAY_DYNAMIC_DIM, 4};
    HurrayWriter *w = NULL;
    OK(hurray_writer_create(path, &w));
    OK(hurray_writer_add_dense(w, "x", dtype("f32"), dims_x, 3, x, sizeof x));
    OK(hurray_writer_add_dense(w, "n", dtype("u4"), dims_n, 2, n_packed, n_len));
    OK(hurray_writer_add_dense(w, "m", dtype("bool"), dims_m, 2, m_packed, m_len));
    OK(hurray_writer_add_dense(w, "s", dtype("f64"), NULL, 0, &scalar, sizeof scalar));
    OK(hurray_writer_add_descriptor(w, "d", dtype("f32"), dims_d, 2));
    OK(hurray_writer_finish(w));

    HurrayFile *f = NULL;
    const HurrayTensor *t = NULL;
    HurraySlice *s = NULL;
    OK(hurray_file_open(path, &f));

    context = "plain: f32";
    OK(hurray_file_lookup(f, "x", &t));
    const Range x_cases[][3] = {
        {{0, 4, 1}, {0, 5, 1}, {0, 6, 1}},
        {{1, 3, 1}, {0, 5, 2}, {5, 6, 1}},
        {{0, 4, 3}, {2, 3, 1}, {0, 6, 4}},
        {{3, 4, 1}, {1, 5, 3}, {1, 6, 2}},
        {{2, 2, 1}, {0, 5, 1}, {0, 6, 1}}, /* empty: NULL and 0 */
    };
    for (size_t i = 0; i < sizeof x_cases / sizeof x_cases[0]; i++) {
        s = NULL;
        OK(tensor_slice(t, x_cases[i], 3, &s));
        check_slice("plain: f32 slice", s, dtype("f32"), dims_x, 3, x_cases[i], (const uint8_t *)x, 32);
    }
    /* steps = NULL means steps of 1. */
    context = "plain: f32";
    const uint64_t starts[3] = {1, 2, 3}, stops[3] = {3, 4, 6};
    s = NULL;
    OK(hurray_tensor_read_slice(t, starts, stops, NULL, 3, &s));
    const Range ones[3] = {{1, 3, 1}, {2, 4, 1}, {3, 6, 1}};
    check_slice("plain: NULL steps", s, dtype("f32"), dims_x, 3, ones, (const uint8_t *)x, 32);

    /* Bad ranges: the runtime's InvalidSlice, naming the dimension. */
    context = "plain: errors";
    const Range past_end[3] = {{0, 4, 1}, {0, 6, 1}, {0, 6, 1}};
    s = (HurraySlice *)1;
    CHECK(tensor_slice(t, past_end, 3, &s) == HURRAY_ERR_INVALID_SLICE, "stop past the end");
    CHECK(s == (HurraySlice *)1, "out untouched on failure");
    CHECK(strcmp(last_kind(), "InvalidSlice") == 0, "kind %s", last_kind());
    CHECK(strstr(last_error(), "dimension 1") && strstr(last_error(), "\"x\""), "message %s", last_error());
    const Range step0[3] = {{0, 4, 0}, {0, 5, 1}, {0, 6, 1}};
    CHECK(tensor_slice(t, step0, 3, &s) == HURRAY_ERR_INVALID_SLICE, "step 0");
    const Range backwards[3] = {{3, 1, 1}, {0, 5, 1}, {0, 6, 1}};
    CHECK(tensor_slice(t, backwards, 3, &s) == HURRAY_ERR_INVALID_SLICE, "start > stop");
    CHECK(tensor_slice(t, x_cases[0], 2, &s) == HURRAY_ERR_INVALID_SLICE, "rank 2 for a rank-3 tensor");
    CHECK(strstr(last_error(), "one range per dimension") != NULL, "message %s", last_error());
    CHECK(hurray_tensor_read_slice(t, starts, NULL, NULL, 3, &s) == HURRAY_ERR_NULL_ARGUMENT, "NULL stops");
    CHECK(hurray_tensor_read_slice(t, starts, stops, NULL, 3, NULL) == HURRAY_ERR_NULL_ARGUMENT, "NULL out");
    CHECK(hurray_tensor_read_slice(NULL, starts, stops, NULL, 3, &s) == HURRAY_ERR_NULL_ARGUMENT,
          "NULL tensor");
    CHECK(strcmp(hurray_status_name(HURRAY_ERR_INVALID_SLICE), "HURRAY_ERR_INVALID_SLICE") == 0, "name");

    /* Sub-byte types: packed again from the slice's first element. */
    OK(hurray_file_lookup(f, "n", &t));
    const Range n_cases[][2] = {
        {{0, 5, 1}, {0, 7, 1}}, {{1, 4, 1}, {1, 7, 2}}, {{0, 5, 2}, {3, 4, 1}},
        {{4, 5, 1}, {0, 7, 1}}, {{1, 5, 3}, {2, 7, 4}},
    };
    for (size_t i = 0; i < sizeof n_cases / sizeof n_cases[0]; i++) {
        s = NULL;
        OK(tensor_slice(t, n_cases[i], 2, &s));
        check_slice("plain: u4 slice", s, dtype("u4"), dims_n, 2, n_cases[i], n_packed, 4);
    }
    context = "plain: bool";
    OK(hurray_file_lookup(f, "m", &t));
    const Range m_cases[][2] = {
        {{0, 3, 1}, {1, 11, 3}}, {{1, 2, 1}, {0, 11, 1}}, {{0, 3, 2}, {3, 10, 1}}, {{0, 3, 1}, {0, 11, 1}},
    };
    for (size_t i = 0; i < sizeof m_cases / sizeof m_cases[0]; i++) {
        s = NULL;
        OK(tensor_slice(t, m_cases[i], 2, &s));
        check_slice("plain: bool slice", s, dtype("bool"), dims_m, 2, m_cases[i], m_packed, 1);
    }

    /* Rank 0: no ranges, NULL arrays allowed. */
    context = "plain: scalar";
    OK(hurray_file_lookup(f, "s", &t));
    s = NULL;
    OK(hurray_tensor_read_slice(t, NULL, NULL, NULL, 0, &s));
    check_slice("plain: scalar slice", s, dtype("f64"), NULL, 0, NULL, (const uint8_t *)&scalar, 64);
    context = "plain: descriptor-only";
    OK(hurray_file_lookup(f, "d", &t));
    const Range d_range[2] = {{0, 0, 1}, {0, 4, 1}};
    CHECK(tensor_slice(t, d_range, 2, &s) == HURRAY_ERR_NO_DATA, "no data");

    /* A slice owns its bytes: readable after the file is closed. */
    context = "plain: lifetime";
    OK(hurray_file_lookup(f, "x", &t));
    s = NULL;
    OK(tensor_slice(t, x_cases[1], 3, &s));
    hurray_file_close(f);
    check_slice("plain: after close", s, dtype("f32"), dims_x, 3, x_cases[1], (const uint8_t *)x, 32);
    hurray_slice_free(NULL);
}

/* ------------------------------------------------- sharded checkpoint -- */

static uint8_t *read_file(const char *path, size_t *size) {
    FILE *in = fopen(path, "rb");
    if (!in) return NULL;
    fseek(in, 0, SEEK_END);
    long n = ftell(in);
    fseek(in, 0, SEEK_SET);
    uint8_t *bytes = malloc((size_t)n);
    if (bytes && fread(bytes, 1, (size_t)n, in) != (size_t)n) {
        free(bytes);
        bytes = NULL;
    }
    fclose(in);
    *size = (size_t)n;
    return bytes;
}

static int write_file(const char *path, const uint8_t *bytes, size_t size) {
    FILE *out = fopen(path, "wb");
    if (!out) return -1;
    size_t n = fwrite(bytes, 1, size, out);
    return fclose(out) == 0 && n == size ? 0 : -1;
}

static void sharded(const char *dir) {
    char index[4096], plain_path[4096], member[4096];
    snprintf(index, sizeof index, "%s/ckpt/model.hurray", dir);
    snprintf(plain_path, sizeof plain_path, "%s/plain.hurray", dir);
    snprintf(member, sizeof member, "%s/ckpt/rank-1.hurray", dir);
    static float w[70];
    for (int i = 0; i < 70; i++) w[i] = (float)(i - 20);
    uint8_t q_codes[24], q_packed[12];
    for (int i = 0; i < 24; i++) q_codes[i] = (uint8_t)((5 * i) % 16);
    pack(q_codes, 24, 4, q_packed);
    const float b[2] = {0.5f, 1.5f};
    const uint64_t dims_w[2] = {10, 7}, dims_q[2] = {4, 6}, dims_b[1] = {2};

    context = "sharded: open";
    HurraySharded *h = NULL;
    OK(hurray_sharded_open(index, &h));
    if (!h) return;
    size_t n = 0;
    OK(hurray_sharded_count(h, &n));
    CHECK(n == 3, "3 logical tensors, got %zu", n);
    const char *want_names[3] = {"b", "q", "w"};
    for (size_t i = 0; i < 3 && i < n; i++) {
        const char *name = NULL;
        size_t len = 0;
        OK(hurray_sharded_name_at(h, i, &name, &len));
        CHECK(name && strcmp(name, want_names[i]) == 0 && len == 1, "name %zu", i);
    }
    const char *name = NULL;
    CHECK(hurray_sharded_name_at(h, 3, &name, NULL) == HURRAY_ERR_OUT_OF_RANGE, "name 3");
    uint8_t code = 0;
    const uint64_t *dims = NULL;
    size_t rank = 0, pieces = 0;
    OK(hurray_sharded_tensor_info(h, "w", &code, &dims, &rank, &pieces));
    CHECK(code == dtype("f32") && rank == 2 && dims && dims[0] == 10 && dims[1] == 7 && pieces == 3,
          "w: f32 [10, 7] in 3 pieces");
    OK(hurray_sharded_tensor_info(h, "q", &code, &dims, &rank, NULL));
    CHECK(code == dtype("i4") && rank == 2 && dims && dims[0] == 4 && dims[1] == 6, "q: i4 [4, 6]");
    OK(hurray_sharded_tensor_info(h, "b", &code, &dims, &rank, &pieces));
    CHECK(code == dtype("f32") && rank == 1 && pieces == 1, "b: whole");
    CHECK(hurray_sharded_tensor_info(h, "nope", &code, &dims, &rank, NULL) == HURRAY_ERR_NOT_FOUND, "unknown");
    size_t members = 0;
    OK(hurray_sharded_member_count(h, &members));
    CHECK(members == 3, "3 members");
    for (size_t i = 0; i < members; i++) {
        const char *p = NULL;
        uint64_t size = 0, crc = 0;
        char want[64];
        snprintf(want, sizeof want, "rank-%zu.hurray", i);
        OK(hurray_sharded_member_at(h, i, &p, &size, &crc));
        CHECK(p && strcmp(p, want) == 0 && size > 0 && crc <= 0xFFFFFFFFu, "member %zu: %s", i, p);
    }
    size_t meta = 0;
    const char *key = NULL, *value = NULL;
    size_t key_len = 0, value_len = 0;
    OK(hurray_sharded_metadata_count(h, &meta));
    OK(hurray_sharded_metadata_at(h, 0, &key, &key_len, &value, &value_len));
    CHECK(meta == 1 && key_len == 6 && memcmp(key, "format", 6) == 0 && value_len == 2 &&
              memcmp(value, "pt", 2) == 0,
          "metadata format=pt");

    /* w across its chunk boundaries (rows 3 and 7). */
    context = "sharded: w";
    const Range w_cases[][2] = {
        {{0, 10, 1}, {0, 7, 1}}, /* assembled whole */
        {{2, 8, 1}, {1, 6, 1}},  /* crosses both boundaries */
        {{0, 10, 3}, {6, 7, 1}}, /* a step landing in every chunk */
        {{3, 7, 1}, {0, 7, 1}},  /* exactly the middle chunk */
        {{1, 10, 4}, {0, 7, 3}}, {{6, 8, 1}, {2, 3, 1}}, {{5, 5, 1}, {0, 7, 1}},
    };
    for (size_t i = 0; i < sizeof w_cases / sizeof w_cases[0]; i++) {
        HurraySlice *s = NULL;
        OK(sharded_slice(h, "w", w_cases[i], 2, &s));
        check_slice("sharded: w slice", s, dtype("f32"), dims_w, 2, w_cases[i], (const uint8_t *)w, 32);
    }
    /* q across its column boundary (column 3), packed i4. */
    const Range q_cases[][2] = {
        {{0, 4, 1}, {0, 6, 1}}, {{0, 4, 1}, {1, 6, 2}}, {{1, 3, 1}, {2, 5, 1}}, {{3, 4, 1}, {2, 4, 1}},
    };
    for (size_t i = 0; i < sizeof q_cases / sizeof q_cases[0]; i++) {
        HurraySlice *s = NULL;
        OK(sharded_slice(h, "q", q_cases[i], 2, &s));
        check_slice("sharded: q slice", s, dtype("i4"), dims_q, 2, q_cases[i], q_packed, 4);
    }
    const Range b_all[1] = {{0, 2, 1}};
    HurraySlice *s = NULL;
    OK(sharded_slice(h, "b", b_all, 1, &s));
    check_slice("sharded: b", s, dtype("f32"), dims_b, 1, b_all, (const uint8_t *)b, 32);

    context = "sharded: errors";
    const Range too_far[2] = {{0, 11, 1}, {0, 7, 1}};
    CHECK(sharded_slice(h, "w", too_far, 2, &s) == HURRAY_ERR_INVALID_SLICE, "row 10 of 10");
    CHECK(strcmp(last_kind(), "InvalidSlice") == 0 && strstr(last_error(), "dimension 0"), "message %s",
          last_error());
    CHECK(sharded_slice(h, "w", too_far, 1, &s) == HURRAY_ERR_INVALID_SLICE, "rank 1 for rank 2");
    CHECK(sharded_slice(h, "nope", b_all, 1, &s) == HURRAY_ERR_NOT_FOUND, "unknown tensor");
    CHECK(hurray_sharded_read_slice(h, "w", NULL, NULL, NULL, 2, &s) == HURRAY_ERR_NULL_ARGUMENT, "NULL ranges");
    CHECK(hurray_sharded_read_slice(NULL, "w", NULL, NULL, NULL, 0, &s) == HURRAY_ERR_NULL_ARGUMENT, "NULL handle");
    OK(hurray_sharded_verify_members(h));

    /* A whole tensor in place: its member's file handle, zero-copy. */
    context = "sharded: whole";
    HurrayFile *member_file = NULL;
    const HurrayTensor *whole = NULL;
    OK(hurray_sharded_whole(h, "b", &member_file, &whole));
    const void *whole_data = NULL;
    size_t whole_len = 0;
    OK(hurray_tensor_data(whole, &whole_data, &whole_len));
    CHECK(whole_len == 8 && memcmp(whole_data, b, 8) == 0, "b in place");
    CHECK(hurray_sharded_whole(h, "w", &member_file, &whole) == HURRAY_ERR_CHUNKED, "w is in 3 pieces");
    CHECK(strcmp(last_kind(), "Chunked") == 0 && strstr(last_error(), "3 pieces"), "message %s", last_error());
    CHECK(hurray_sharded_whole(h, "nope", &member_file, &whole) == HURRAY_ERR_NOT_FOUND, "unknown");

    /* A slice outlives its checkpoint handle. */
    s = NULL;
    OK(sharded_slice(h, "w", w_cases[1], 2, &s));
    hurray_sharded_close(h);
    check_slice("sharded: after close", s, dtype("f32"), dims_w, 2, w_cases[1], (const uint8_t *)w, 32);
    /* So does a member's file handle. */
    OK(hurray_tensor_data(whole, &whole_data, &whole_len));
    CHECK(whole_len == 8 && memcmp(whole_data, b, 8) == 0, "b after the checkpoint is closed");
    hurray_file_close(member_file);
    hurray_sharded_close(NULL);

    /* Not an index: a plain file and a member. The index itself is a
       Hurray file without tensors. */
    context = "sharded: not an index";
    HurraySharded *h2 = NULL;
    CHECK(hurray_sharded_open(plain_path, &h2) == HURRAY_ERR_INVALID_FILE && h2 == NULL, "plain file");
    CHECK(strstr(last_error(), "not the index") != NULL, "message %s", last_error());
    CHECK(hurray_sharded_open(member, &h2) == HURRAY_ERR_INVALID_FILE, "member file");
    snprintf(member, sizeof member, "%s/ckpt/missing.hurray", dir);
    CHECK(hurray_sharded_open(member, &h2) == HURRAY_ERR_IO, "missing file");
    snprintf(member, sizeof member, "%s/ckpt/rank-1.hurray", dir);
    HurrayFile *f = NULL;
    OK(hurray_file_open(index, &f));
    OK(hurray_file_count(f, &n));
    CHECK(n == 0, "an index holds no tensors of its own");
    hurray_file_close(f);

    /* One flipped byte of w's row 3 (1.0 .. 7.0) in rank-1.hurray. */
    context = "sharded: corrupt member";
    size_t size = 0;
    uint8_t *bytes = read_file(member, &size);
    CHECK(bytes != NULL, "read %s", member);
    if (!bytes) return;
    size_t at = 0;
    for (size_t i = 0; i + 28 <= size; i++) {
        if (memcmp(bytes + i, w + 21, 28) == 0) {
            at = i;
            break;
        }
    }
    CHECK(at != 0, "row 3 found in the member");
    bytes[at + 5] ^= 0x10;
    CHECK(write_file(member, bytes, size) == 0, "write %s", member);
    OK(hurray_sharded_open(index, &h)); /* opening reads no member */
    CHECK(hurray_sharded_verify_members(h) == HURRAY_ERR_MEMBER_MISMATCH, "the CRC-32C differs");
    CHECK(strcmp(last_kind(), "MemberMismatch") == 0, "kind %s", last_kind());
    CHECK(strstr(last_error(), "rank-1.hurray") && strstr(last_error(), "crc32c"), "message %s", last_error());
    CHECK(strcmp(hurray_status_name(HURRAY_ERR_MEMBER_MISMATCH), "HURRAY_ERR_MEMBER_MISMATCH") == 0, "name");
    hurray_sharded_close(h);

    /* Truncated: refused before it is mapped; the other members still read. */
    context = "sharded: truncated member";
    CHECK(write_file(member, bytes, size - 1) == 0, "write %s", member);
    free(bytes);
    OK(hurray_sharded_open(index, &h));
    const Range middle[2] = {{4, 5, 1}, {0, 7, 1}};
    s = (HurraySlice *)1;
    CHECK(sharded_slice(h, "w", middle, 2, &s) == HURRAY_ERR_MEMBER_MISMATCH && s == (HurraySlice *)1,
          "a slice in the truncated member");
    CHECK(strstr(last_error(), "size") && strstr(last_error(), "rank-1.hurray"), "message %s", last_error());
    const Range first[2] = {{0, 3, 1}, {0, 7, 1}};
    s = NULL;
    OK(sharded_slice(h, "w", first, 2, &s));
    check_slice("sharded: rows of rank-0", s, dtype("f32"), dims_w, 2, first, (const uint8_t *)w, 32);
    hurray_sharded_close(h);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    plain(argv[1]);
    sharded(argv[1]);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
