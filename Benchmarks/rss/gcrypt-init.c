/*
 * gcrypt-init — what each step of libgcrypt's initialisation and first use adds to a process's resident
 * memory, for README.md ("Memory"): the whole process's Rss and that of libgcrypt's and libgpg-error's
 * mappings, from /proc/self/smaps, after each step, in the order Sluice takes them
 * (Sources/SluiceCrypto/Gcrypt.swift, ChaCha20Poly1305.swift).
 *
 *   gcc -O2 -o /tmp/gcrypt-init Benchmarks/rss/gcrypt-init.c -lgcrypt && /tmp/gcrypt-init
 */
#include <gcrypt.h>
#include <stdio.h>
#include <string.h>

static void report(const char *step) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512], name[512] = "";
    long kb, total = 0, gcrypt = 0, gpg_error = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "Rss: %ld kB", &kb) == 1) {
            total += kb;
            if (strstr(name, "libgcrypt")) gcrypt += kb;
            if (strstr(name, "libgpg-error")) gpg_error += kb;
        } else if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
            /* A mapping's header line, "start-end perms offset dev inode [path]"; fields start upper case. */
            strcpy(name, line);
        }
    }
    if (f) fclose(f);
    printf("%-36s process %5ld KiB   libgcrypt %4ld KiB   libgpg-error %4ld KiB\n", step, total, gcrypt, gpg_error);
}

int main(void) {
    static unsigned char record[65536];
    unsigned char key[32] = {1}, nonce[12] = {0}, tag[16];
    gcry_cipher_hd_t h;
    report("start (both libraries mapped)");
    if (!gcry_check_version(GCRYPT_VERSION)) return 1;
    report("gcry_check_version");
    gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
    report("GCRYCTL_DISABLE_SECMEM");
    gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
    report("GCRYCTL_INITIALIZATION_FINISHED");
    if (gcry_cipher_open(&h, GCRY_CIPHER_CHACHA20, GCRY_CIPHER_MODE_POLY1305, 0)) return 2;
    report("gcry_cipher_open");
    gcry_cipher_setkey(h, key, sizeof key);
    report("first gcry_cipher_setkey (self-test)");
    gcry_cipher_setiv(h, nonce, sizeof nonce);
    gcry_cipher_authenticate(h, nonce, 2);
    gcry_cipher_encrypt(h, record, sizeof record, NULL, 0);
    gcry_cipher_gettag(h, tag, sizeof tag);
    report("one 64 KiB record sealed");
    gcry_cipher_setiv(h, nonce, sizeof nonce);
    gcry_cipher_authenticate(h, nonce, 2);
    gcry_cipher_decrypt(h, record, sizeof record, NULL, 0);
    if (gcry_cipher_checktag(h, tag, sizeof tag)) return 3;
    report("and opened");
    gcry_cipher_close(h);
    return 0;
}
