// The TCG TPM 2.0 software stack (Debian's libtss2-dev): ESYS, the TCTI loader, marshalling
// and response-code text, for KeychainTPM only.
#include <stdint.h>
#include <string.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

// The TSS headers define their constants as casts ("((TPM2_ALG_ID) 0x000B)"), which Swift does
// not import; these helpers fill the few structures keychainfs sends, with those constants.

static const ESYS_TR kc_tr_none = ESYS_TR_NONE;
static const ESYS_TR kc_tr_password = ESYS_TR_PASSWORD;
static const ESYS_TR kc_tr_owner = ESYS_TR_RH_OWNER;
static const ESYS_TR kc_tr_pcr0 = ESYS_TR_PCR0;
static const TPM2_SE kc_se_policy = TPM2_SE_POLICY;
static const TPM2_SE kc_se_trial = TPM2_SE_TRIAL;
static const TPMI_ALG_HASH kc_alg_sha256 = TPM2_ALG_SHA256;
static const TPM2_SU kc_su_clear = TPM2_SU_CLEAR;

// Response codes keychainfs tells apart. A TPM format-one code carries the parameter, handle or
// session number it applies to; kc_rc_base strips it.
static const TSS2_RC kc_rc_initialize = TPM2_RC_INITIALIZE;
static const TSS2_RC kc_rc_policy_fail = TPM2_RC_POLICY_FAIL;
static const TSS2_RC kc_rc_auth_fail = TPM2_RC_AUTH_FAIL;
static const TSS2_RC kc_rc_bad_auth = TPM2_RC_BAD_AUTH;
static const TSS2_RC kc_rc_integrity = TPM2_RC_INTEGRITY;
static const TSS2_RC kc_rc_lockout = TPM2_RC_LOCKOUT;
static inline TSS2_RC kc_rc_base(TSS2_RC rc) {
    if ((rc & TSS2_RC_LAYER_MASK) != TSS2_TPM_RC_LAYER) return rc;
    return (rc & TPM2_RC_FMT1) ? (rc & (TPM2_RC_FMT1 | 0x3F)) : rc;
}
static inline int kc_rc_is_tpm(TSS2_RC rc) { return (rc & TSS2_RC_LAYER_MASK) == TSS2_TPM_RC_LAYER; }
// A TPM format-one code about a command parameter (P set): what the TPM says of a blob it cannot
// take. Warnings (out of object memory, retry) and handle or session codes are not about the blob.
static inline int kc_rc_is_parameter_error(TSS2_RC rc) {
    return kc_rc_is_tpm(rc) && (rc & TPM2_RC_FMT1) && (rc & TPM2_RC_P);
}

// The storage root key: ECC P-256 with AES-128-CFB, as tpm2_createprimary's ECC default, so the
// same TPM always derives the same key from its owner seed (nothing is made persistent).
static inline void kc_srk_template(TPM2B_PUBLIC *out) {
    memset(out, 0, sizeof *out);
    TPMT_PUBLIC *p = &out->publicArea;
    p->type = TPM2_ALG_ECC;
    p->nameAlg = TPM2_ALG_SHA256;
    p->objectAttributes = TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT
        | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA;
    p->parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
    p->parameters.eccDetail.symmetric.keyBits.aes = 128;
    p->parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
    p->parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
    p->parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    p->parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
}

// A sealed data object (keyedhash, no scheme) that never leaves this TPM. With a policy digest
// only a policy session satisfying it unseals; without one, the object's auth value does.
static inline int kc_sealed_template(TPM2B_PUBLIC *out, const uint8_t *policy, size_t policy_len) {
    memset(out, 0, sizeof *out);
    if (policy_len > sizeof out->publicArea.authPolicy.buffer) return -1;
    TPMT_PUBLIC *p = &out->publicArea;
    p->type = TPM2_ALG_KEYEDHASH;
    p->nameAlg = TPM2_ALG_SHA256;
    p->objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | (policy_len ? 0 : TPMA_OBJECT_USERWITHAUTH);
    p->parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL;
    p->authPolicy.size = (UINT16)policy_len;
    if (policy_len) memcpy(p->authPolicy.buffer, policy, policy_len);
    return 0;
}

// The secret to seal and the object's auth value; *out lives in guarded memory (the caller's).
static inline int kc_sensitive_create(TPM2B_SENSITIVE_CREATE *out, const uint8_t *data, size_t len,
                                      const uint8_t *auth, size_t auth_len) {
    memset(out, 0, sizeof *out);
    if (len > sizeof out->sensitive.data.buffer || auth_len > sizeof out->sensitive.userAuth.buffer) return -1;
    out->sensitive.data.size = (UINT16)len;
    memcpy(out->sensitive.data.buffer, data, len);
    out->sensitive.userAuth.size = (UINT16)auth_len;
    if (auth_len) memcpy(out->sensitive.userAuth.buffer, auth, auth_len);
    return 0;
}

static inline int kc_auth(TPM2B_AUTH *out, const uint8_t *auth, size_t len) {
    memset(out, 0, sizeof *out);
    if (len > sizeof out->buffer) return -1;
    out->size = (UINT16)len;
    memcpy(out->buffer, auth, len);
    return 0;
}

// PCRs of the SHA-256 bank, one bit per PCR (0-23).
static inline void kc_pcr_selection(TPML_PCR_SELECTION *out, uint32_t mask) {
    memset(out, 0, sizeof *out);
    out->count = 1;
    out->pcrSelections[0].hash = TPM2_ALG_SHA256;
    out->pcrSelections[0].sizeofSelect = 3;
    for (int i = 0; i < 24; i++)
        if (mask & (1u << i)) out->pcrSelections[0].pcrSelect[i / 8] |= (uint8_t)(1u << (i % 8));
}

// The PCRs of the SHA-256 bank a selection names (TPM2_PCR_Read's pcrSelectionOut: the PCRs the
// TPM read, none of a bank it has not allocated).
static inline uint32_t kc_pcr_sha256_mask(const TPML_PCR_SELECTION *s) {
    uint32_t mask = 0;
    for (UINT32 i = 0; i < s->count && i < TPM2_NUM_PCR_BANKS; i++) {
        if (s->pcrSelections[i].hash != TPM2_ALG_SHA256) continue;
        for (int b = 0; b < 24 && b / 8 < s->pcrSelections[i].sizeofSelect; b++)
            if (s->pcrSelections[i].pcrSelect[b / 8] & (1u << (b % 8))) mask |= 1u << b;
    }
    return mask;
}

static inline void kc_sym_null(TPMT_SYM_DEF *out) {
    memset(out, 0, sizeof *out);
    out->algorithm = TPM2_ALG_NULL;
}

// Parameter encryption: an HMAC session salted to the storage root key, AES-128-CFB, whose
// attributes say which parameter it hides (decrypt: the command's first, encrypt: the response's).
static const TPM2_SE kc_se_hmac = TPM2_SE_HMAC;
static const TPMA_SESSION kc_session_continue = TPMA_SESSION_CONTINUESESSION;
static const TPMA_SESSION kc_session_decrypt = TPMA_SESSION_DECRYPT;
static const TPMA_SESSION kc_session_encrypt = TPMA_SESSION_ENCRYPT;
static inline void kc_sym_aes128_cfb(TPMT_SYM_DEF *out) {
    memset(out, 0, sizeof *out);
    out->algorithm = TPM2_ALG_AES;
    out->keyBits.aes = 128;
    out->mode.aes = TPM2_ALG_CFB;
}

// One SHA-256 digest to extend a PCR with (tests stand in for a firmware update with it).
static inline void kc_sha256_digest_values(TPML_DIGEST_VALUES *out, const uint8_t digest[32]) {
    memset(out, 0, sizeof *out);
    out->count = 1;
    out->digests[0].hashAlg = TPM2_ALG_SHA256;
    memcpy(out->digests[0].digest.sha256, digest, 32);
}

static inline const uint8_t *kc_sensitive_data_bytes(const TPM2B_SENSITIVE_DATA *d) { return d->buffer; }
static inline const uint8_t *kc_digest_bytes(const TPM2B_DIGEST *d) { return d->buffer; }
static inline const uint8_t *kc_name_bytes(const TPM2B_NAME *n) { return n->name; }

// A P-256 key made inside the TPM for signing and key agreement (kSecAttrTokenIDSecureEnclave):
// unrestricted, no scheme fixed (each signature names ECDSA-SHA256), never leaves this TPM.
static inline void kc_ecc_token_key_template(TPM2B_PUBLIC *out) {
    memset(out, 0, sizeof *out);
    TPMT_PUBLIC *p = &out->publicArea;
    p->type = TPM2_ALG_ECC;
    p->nameAlg = TPM2_ALG_SHA256;
    p->objectAttributes = TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_DECRYPT | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT
        | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH;
    p->parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
    p->parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
    p->parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    p->parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
}

// ECDSA with SHA-256 over an external digest: a null ticket (the TPM did not hash it itself),
// which an unrestricted key accepts.
static inline void kc_ecdsa_sha256(TPMT_SIG_SCHEME *scheme, TPMT_TK_HASHCHECK *ticket) {
    memset(scheme, 0, sizeof *scheme);
    scheme->scheme = TPM2_ALG_ECDSA;
    scheme->details.ecdsa.hashAlg = TPM2_ALG_SHA256;
    memset(ticket, 0, sizeof *ticket);
    ticket->tag = TPM2_ST_HASHCHECK;
    ticket->hierarchy = TPM2_RH_NULL;
}

static inline int kc_digest(TPM2B_DIGEST *out, const uint8_t *bytes, size_t len) {
    memset(out, 0, sizeof *out);
    if (len > sizeof out->buffer) return -1;
    out->size = (UINT16)len;
    memcpy(out->buffer, bytes, len);
    return 0;
}

// Big-endian coordinates and signature halves, with their lengths.
static inline const uint8_t *kc_ecc_x(const TPM2B_PUBLIC *p, size_t *len) { *len = p->publicArea.unique.ecc.x.size; return p->publicArea.unique.ecc.x.buffer; }
static inline const uint8_t *kc_ecc_y(const TPM2B_PUBLIC *p, size_t *len) { *len = p->publicArea.unique.ecc.y.size; return p->publicArea.unique.ecc.y.buffer; }
static inline const uint8_t *kc_sig_r(const TPMT_SIGNATURE *s, size_t *len) { *len = s->signature.ecdsa.signatureR.size; return s->signature.ecdsa.signatureR.buffer; }
static inline const uint8_t *kc_sig_s(const TPMT_SIGNATURE *s, size_t *len) { *len = s->signature.ecdsa.signatureS.size; return s->signature.ecdsa.signatureS.buffer; }

// A peer's P-256 point for TPM2_ECDH_ZGen, and the shared point's x-coordinate it returns.
static inline int kc_ecc_point(TPM2B_ECC_POINT *out, const uint8_t *x, const uint8_t *y, size_t len) {
    memset(out, 0, sizeof *out);
    if (len > sizeof out->point.x.buffer) return -1;
    out->point.x.size = (UINT16)len;
    memcpy(out->point.x.buffer, x, len);
    out->point.y.size = (UINT16)len;
    memcpy(out->point.y.buffer, y, len);
    return 0;
}
static inline const uint8_t *kc_point_x(const TPM2B_ECC_POINT *p, size_t *len) { *len = p->point.x.size; return p->point.x.buffer; }
