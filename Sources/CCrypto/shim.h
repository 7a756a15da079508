// The system's libcrypto (OpenSSL), with no package dependency: the hub hashes bearer
// tokens with SHA-256, draws them from its random generator, and compares hashes in
// constant time.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
