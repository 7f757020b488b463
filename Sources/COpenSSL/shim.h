// OpenSSL 3 libcrypto (Debian's libssl-dev), for KeychainKeys only.
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/bio.h>

// Macros Swift cannot import (built from other macros), as constants.
static const int kc_selection_keypair = EVP_PKEY_KEYPAIR;
static const int kc_selection_public = EVP_PKEY_PUBLIC_KEY;
static const int kc_gcm_set_ivlen = EVP_CTRL_GCM_SET_IVLEN;
static const int kc_gcm_get_tag = EVP_CTRL_GCM_GET_TAG;
static const int kc_gcm_set_tag = EVP_CTRL_GCM_SET_TAG;
static const int kc_pkey_rsa = EVP_PKEY_RSA;
static const int kc_pkey_ec = EVP_PKEY_EC;
static const int kc_pkey_ed25519 = EVP_PKEY_ED25519;

// Parameter names. OSSL_PARAM and OSSL_PARAM_BLD keep the name's pointer, so it must outlive
// the call: a Swift string passed as `const char *` does not.
static const char *const kc_param_digest = OSSL_KDF_PARAM_DIGEST;
static const char *const kc_param_key = OSSL_KDF_PARAM_KEY;
static const char *const kc_param_info = OSSL_KDF_PARAM_INFO;
static const char *const kc_param_group = OSSL_PKEY_PARAM_GROUP_NAME;
static const char *const kc_param_pub = OSSL_PKEY_PARAM_PUB_KEY;
static const char *const kc_param_priv = OSSL_PKEY_PARAM_PRIV_KEY;
static const char *const kc_mac_param_digest = OSSL_MAC_PARAM_DIGEST;
