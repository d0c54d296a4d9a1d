/*
 * ES256 client assertions and DPoP proofs (jwt.h) with libcrypto: a client's
 * key is read from PEM (PKCS #8 or SEC 1), a DPoP key from its one-line form;
 * the signature converted from DER to the fixed 64-byte r || s of JWS
 * (RFC 7518, 3.4).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sodium.h>

#include "json.h"
#include "jwt.h"
#include "xalloc.h"

/* The P-256 private key of pem, or NULL with *why. */
static EVP_PKEY *
read_key(const char *pem, const char **why)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)strlen(pem));
	EVP_PKEY *key = bio != NULL ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	char group[64] = "";
	size_t glen = 0;

	BIO_free(bio);
	if (key == NULL) {
		*why = "the client key is not a PEM private key";
		return NULL;
	}
	if (!EVP_PKEY_is_a(key, "EC") ||
	    EVP_PKEY_get_utf8_string_param(key, "group", group, sizeof group, &glen) != 1 ||
	    (strcmp(group, "prime256v1") != 0 && strcmp(group, "P-256") != 0)) {
		*why = "the client key is not an elliptic curve P-256 key (ES256)";
		EVP_PKEY_free(key);
		return NULL;
	}
	return key;
}

bool
jwt_key_usable(const char *pem, const char **why)
{
	EVP_PKEY *key = read_key(pem, why);

	EVP_PKEY_free(key);
	return key != NULL;
}

static char *
b64url(const unsigned char *bin, size_t n)
{
	size_t len = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	char *out = xmalloc(len);

	sodium_bin2base64(out, len, bin, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	return out;
}

/* The JWS signature of input: r || s, 32 bytes each; false on failure. */
static bool
sign_es256(EVP_PKEY *key, const char *input, unsigned char sig[64])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char der[128];
	const unsigned char *p = der;
	size_t dlen = sizeof der;
	ECDSA_SIG *es = NULL;
	const BIGNUM *r, *s;
	bool ok;

	ok = ctx != NULL && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
	    EVP_DigestSign(ctx, der, &dlen, (const unsigned char *)input, strlen(input)) == 1;
	EVP_MD_CTX_free(ctx);
	if (ok)
		ok = (es = d2i_ECDSA_SIG(NULL, &p, (long)dlen)) != NULL;
	if (ok) {
		ECDSA_SIG_get0(es, &r, &s);
		ok = BN_bn2binpad(r, sig, 32) == 32 && BN_bn2binpad(s, sig + 32, 32) == 32;
	}
	ECDSA_SIG_free(es);
	return ok;
}

/* header.claims (JSON texts) signed with key: the compact JWT, or NULL. */
static char *
jwt_sign(EVP_PKEY *key, const char *header, const char *claims)
{
	char *h = b64url((const unsigned char *)header, strlen(header));
	char *c = b64url((const unsigned char *)claims, strlen(claims));
	char *input = xasprintf("%s.%s", h, c), *sig64, *out = NULL;
	unsigned char sig[64];

	if (sign_es256(key, input, sig)) {
		sig64 = b64url(sig, sizeof sig);
		out = xasprintf("%s.%s", input, sig64);
		free(sig64);
	}
	free(h);
	free(c);
	free(input);
	return out;
}

char *
jwt_client_assertion(const char *pem, const char *client_id, const char *audience,
    const char **why)
{
	EVP_PKEY *key = read_key(pem, why);
	unsigned char jti[16];
	char jti_text[sizeof jti * 2 + 1];
	char *text, *out = NULL;
	cJSON *c;
	time_t now = time(NULL);

	if (key == NULL)
		return NULL;
	randombytes_buf(jti, sizeof jti);
	sodium_bin2hex(jti_text, sizeof jti_text, jti, sizeof jti);
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "iss", client_id);
	cJSON_AddStringToObject(c, "sub", client_id);
	cJSON_AddStringToObject(c, "aud", audience);
	cJSON_AddNumberToObject(c, "iat", (double)now);
	cJSON_AddNumberToObject(c, "exp", (double)now + 300);
	cJSON_AddStringToObject(c, "jti", jti_text);
	text = json_print(c);
	cJSON_Delete(c);
	out = jwt_sign(key, "{\"alg\":\"ES256\",\"typ\":\"JWT\"}", text);
	free(text);
	if (out == NULL)
		*why = "the client key could not sign the client assertion";
	EVP_PKEY_free(key);
	return out;
}

/* --- DPoP ------------------------------------------------------------------ */

char *
jwt_dpop_key_new(void)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	unsigned char *der = NULL;
	int n = key != NULL ? i2d_PrivateKey(key, &der) : -1;
	char *out = n > 0 ? b64url(der, (size_t)n) : NULL;

	if (n > 0)
		OPENSSL_clear_free(der, (size_t)n);
	EVP_PKEY_free(key);
	return out;
}

/* The DPoP key of its one-line form, or NULL. */
static EVP_PKEY *
jwt_dpop_key_read(const char *text)
{
	size_t max = strlen(text), n = 0;
	unsigned char *der = xmalloc(max + 1);
	const unsigned char *p = der;
	EVP_PKEY *key = NULL;

	if (sodium_base642bin(der, max + 1, text, strlen(text), NULL, &n, NULL,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING) == 0)
		key = d2i_AutoPrivateKey(NULL, &p, (long)n);
	sodium_memzero(der, max + 1);
	free(der);
	if (key != NULL && !EVP_PKEY_is_a(key, "EC")) {
		EVP_PKEY_free(key);
		key = NULL;
	}
	return key;
}

/* The public JWK of key: {"crv","kty","x","y"} (RFC 7638's members), or NULL. */
static cJSON *
jwt_public_jwk(EVP_PKEY *key)
{
	BIGNUM *x = NULL, *y = NULL;
	unsigned char bx[32], by[32];
	cJSON *jwk = NULL;
	char *sx, *sy;

	if (EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X, &x) == 1 &&
	    EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y, &y) == 1 &&
	    BN_bn2binpad(x, bx, 32) == 32 && BN_bn2binpad(y, by, 32) == 32) {
		sx = b64url(bx, 32);
		sy = b64url(by, 32);
		jwk = cJSON_CreateObject();
		cJSON_AddStringToObject(jwk, "crv", "P-256");
		cJSON_AddStringToObject(jwk, "kty", "EC");
		cJSON_AddStringToObject(jwk, "x", sx);
		cJSON_AddStringToObject(jwk, "y", sy);
		free(sx);
		free(sy);
	}
	BN_free(x);
	BN_free(y);
	return jwk;
}

char *
jwt_dpop_proof(const char *key_text, const char *method, const char *url,
    const char *access_token, const char *nonce, const char **why)
{
	EVP_PKEY *key = jwt_dpop_key_read(key_text);
	cJSON *h, *c, *jwk = key != NULL ? jwt_public_jwk(key) : NULL;
	unsigned char jti[16], ath[crypto_hash_sha256_BYTES];
	char jti_text[sizeof jti * 2 + 1], *htext, *ctext, *out, *s;

	if (jwk == NULL) {
		EVP_PKEY_free(key);
		*why = "the connector's DPoP key is not usable";
		return NULL;
	}
	h = cJSON_CreateObject();
	cJSON_AddStringToObject(h, "typ", "dpop+jwt");
	cJSON_AddStringToObject(h, "alg", "ES256");
	cJSON_AddItemToObject(h, "jwk", jwk);
	randombytes_buf(jti, sizeof jti);
	sodium_bin2hex(jti_text, sizeof jti_text, jti, sizeof jti);
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "jti", jti_text);
	cJSON_AddStringToObject(c, "htm", method);
	s = xstrndup(url, strcspn(url, "?#"));
	cJSON_AddStringToObject(c, "htu", s);
	free(s);
	cJSON_AddNumberToObject(c, "iat", (double)time(NULL));
	if (access_token != NULL) {
		crypto_hash_sha256(ath, (const unsigned char *)access_token, strlen(access_token));
		s = b64url(ath, sizeof ath);
		cJSON_AddStringToObject(c, "ath", s);
		free(s);
	}
	if (nonce != NULL)
		cJSON_AddStringToObject(c, "nonce", nonce);
	htext = json_print(h);
	ctext = json_print(c);
	out = jwt_sign(key, htext, ctext);
	if (out == NULL)
		*why = "the connector's DPoP key could not sign a proof";
	free(htext);
	free(ctext);
	cJSON_Delete(h);
	cJSON_Delete(c);
	EVP_PKEY_free(key);
	return out;
}
