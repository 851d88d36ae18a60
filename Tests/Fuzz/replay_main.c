// A main for the harnesses without libFuzzer: runs LLVMFuzzerTestOneInput once on each file named
// (a directory: on each file in it). For builds libFuzzer cannot join: valgrind's memcheck and the
// coverage report (scripts/fuzz.sh).
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/// Defined by a harness that sets up a library once (weak: the JPEG one does not).
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        perror(path);
        return 1;
    }
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    uint8_t *bytes = malloc(length > 0 ? (size_t)length : 1);
    size_t read = bytes != NULL ? fread(bytes, 1, (size_t)length, file) : 0;
    fclose(file);
    if (bytes == NULL || read != (size_t)length) {
        fprintf(stderr, "%s: unreadable\n", path);
        free(bytes);
        return 1;
    }
    LLVMFuzzerTestOneInput(bytes, read);
    free(bytes);
    return 0;
}

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize != NULL) {
        LLVMFuzzerInitialize(&argc, &argv);
    }
    int failures = 0;
    int count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat info;
        if (stat(argv[i], &info) == 0 && S_ISDIR(info.st_mode)) {
            DIR *directory = opendir(argv[i]);
            struct dirent *entry;
            while (directory != NULL && (entry = readdir(directory)) != NULL) {
                if (entry->d_name[0] == '.') {
                    continue;
                }
                char path[4096];
                snprintf(path, sizeof(path), "%s/%s", argv[i], entry->d_name);
                failures += run_file(path);
                count++;
            }
            if (directory != NULL) {
                closedir(directory);
            }
        } else {
            failures += run_file(argv[i]);
            count++;
        }
    }
    fprintf(stderr, "replayed %d inputs\n", count);
    return failures != 0;
}
