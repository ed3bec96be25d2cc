/*
 * hurray_file_open_signed: a file opens only when its signature holds, and
 * a tensor's data is handed out only when its digests match.
 *
 * Usage: test_signed DIR, where the harness (c_api.rs) wrote
 *   good.hurray (+ .sig)       tensor "w": f32 0..255, "b": f32 0..15
 *   data.hurray (+ .sig)       good.hurray with one byte of "w" changed
 *   header.hurray (+ .sig)     good.hurray with its metadata changed
 *   other.sig                  good.hurray's header signed by another key
 *   key.pub                    the signing key (PEM)
 *   ckpt/model.hurray (+ .sig) a signed checkpoint: "t0".."t3", each u32
 *                              [1000] with t_i[j] = 1000 i + j, two per member
 *   bad/model.hurray (+ .sig)  the same, one byte of "t3" changed
 *   swap/model.hurray (+ .sig) the same, its second member from another save
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hurray.h"
#include "check.h"

static char path_buf[4][1024];

static const char *in(const char *dir, const char *name, int slot) {
    snprintf(path_buf[slot], sizeof path_buf[slot], "%s/%s", dir, name);
    return path_buf[slot];
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_signed DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    const char *key = in(dir, "key.pub", 0);
    struct HurrayFile *f = NULL;
    const struct HurrayTensor *t = NULL;
    const void *data = NULL;
    size_t len = 0;

    context = "good";
    OK(hurray_file_open_signed(in(dir, "good.hurray", 1), key, NULL, &f));
    OK(hurray_file_lookup(f, "w", &t));
    OK(hurray_tensor_data(t, &data, &len));
    CHECK(len == 256 * sizeof(float), "len %zu", len);
    int exact = 1;
    for (int i = 0; i < 256; i++) exact &= ((const float *)data)[i] == (float)i;
    CHECK(exact, "values of w");
    DLManagedTensorVersioned *dl = NULL;
    OK(hurray_tensor_to_dlpack(t, &dl));
    if (dl) dl->deleter(dl);
    hurray_file_close(f);

    context = "data changed";
    /* The header is unchanged: the file opens; the changed tensor's data
     * is refused, the other tensor's handed out. */
    OK(hurray_file_open_signed(in(dir, "data.hurray", 1), key, NULL, &f));
    OK(hurray_file_lookup(f, "b", &t));
    OK(hurray_tensor_data(t, &data, &len));
    OK(hurray_file_lookup(f, "w", &t));
    CHECK(hurray_tensor_data(t, &data, &len) == HURRAY_ERR_CHECKSUM_MISMATCH, "data of w");
    CHECK(strstr(last_error(), "\"w\"") && strstr(last_error(), "blake3 digest"), "message");
    dl = NULL;
    CHECK(hurray_tensor_to_dlpack(t, &dl) == HURRAY_ERR_CHECKSUM_MISMATCH && dl == NULL, "export of w");
    hurray_file_close(f);
    /* Opened without a signature, the same file hands the data out. */
    OK(hurray_file_open(in(dir, "data.hurray", 1), &f));
    OK(hurray_file_lookup(f, "w", &t));
    OK(hurray_tensor_data(t, &data, &len));
    hurray_file_close(f);

    context = "header changed";
    f = NULL;
    CHECK(hurray_file_open_signed(in(dir, "header.hurray", 1), key, NULL, &f) == HURRAY_ERR_SIGNATURE && f == NULL,
          "open");
    CHECK(strstr(last_error(), "changed after it was signed") != NULL, "message");
    CHECK(strcmp(last_kind(), "HeaderChanged") == 0, "kind %s", last_kind());

    context = "another key";
    CHECK(hurray_file_open_signed(in(dir, "good.hurray", 1), key, in(dir, "other.sig", 2), &f) ==
              HURRAY_ERR_SIGNATURE,
          "open");
    CHECK(strcmp(last_kind(), "WrongKey") == 0, "kind %s", last_kind());

    context = "arguments";
    CHECK(hurray_file_open_signed(in(dir, "good.hurray", 1), in(dir, "good.hurray", 2), NULL, &f) ==
              HURRAY_ERR_INVALID_ARGUMENT,
          "a key that is not a key");
    CHECK(hurray_file_open_signed(in(dir, "good.hurray", 1), key, in(dir, "missing.sig", 2), &f) == HURRAY_ERR_IO,
          "no signature");
    CHECK(hurray_file_open_signed(NULL, key, NULL, &f) == HURRAY_ERR_NULL_ARGUMENT, "NULL path");
    CHECK(strcmp(hurray_status_name(HURRAY_ERR_SIGNATURE), "HURRAY_ERR_SIGNATURE") == 0, "status name");

    context = "checkpoint";
    struct HurraySharded *h = NULL;
    struct HurraySlice *s = NULL;
    const uint64_t start[1] = {0}, stop[1] = {1000};
    OK(hurray_sharded_open_signed(in(dir, "ckpt/model.hurray", 1), key, NULL, &h));
    OK(hurray_sharded_read_slice(h, "t3", start, stop, NULL, 1, &s));
    OK(hurray_slice_data(s, &data, &len));
    CHECK(len == 4000 && ((const uint32_t *)data)[999] == 3999, "t3 values");
    hurray_slice_free(s);
    hurray_sharded_close(h);

    context = "checkpoint, a member byte changed";
    OK(hurray_sharded_open_signed(in(dir, "bad/model.hurray", 1), key, NULL, &h));
    OK(hurray_sharded_read_slice(h, "t0", start, stop, NULL, 1, &s));
    hurray_slice_free(s);
    s = NULL;
    CHECK(hurray_sharded_read_slice(h, "t3", start, stop, NULL, 1, &s) == HURRAY_ERR_CHECKSUM_MISMATCH && s == NULL,
          "slice of t3");
    CHECK(strstr(last_error(), "\"t3\"") != NULL, "message");
    struct HurrayFile *member = NULL;
    const struct HurrayTensor *whole = NULL;
    CHECK(hurray_sharded_whole(h, "t3", &member, &whole) == HURRAY_ERR_CHECKSUM_MISMATCH && member == NULL, "whole t3");
    hurray_sharded_close(h);
    /* Opened without a signature, the same checkpoint hands it out. */
    OK(hurray_sharded_open(in(dir, "bad/model.hurray", 1), &h));
    OK(hurray_sharded_read_slice(h, "t3", start, stop, NULL, 1, &s));
    hurray_slice_free(s);
    hurray_sharded_close(h);

    context = "checkpoint, a member swapped";
    OK(hurray_sharded_open_signed(in(dir, "swap/model.hurray", 1), key, NULL, &h));
    CHECK(hurray_sharded_read_slice(h, "t3", start, stop, NULL, 1, &s) == HURRAY_ERR_MEMBER_MISMATCH, "slice of t3");
    CHECK(strstr(last_error(), "header digest") != NULL, "message");
    hurray_sharded_close(h);
    CHECK(hurray_sharded_open_signed(in(dir, "ckpt/model.hurray", 1), key, in(dir, "other.sig", 2), &h) ==
              HURRAY_ERR_SIGNATURE,
          "a file's signature of another key");

    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
