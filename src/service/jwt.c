/*
 * ES256 client assertions (jwt.h) with libcrypto: the key is read from PEM
 * (PKCS #8 or SEC 1), the signature converted from DER to the fixed 64-byte
 * r || s of JWS (RFC 7518, 3.4).
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
#include <openssl/pem.h>
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

char *
jwt_client_assertion(const char *pem, const char *client_id, const char *audience,
    const char **why)
{
	EVP_PKEY *key = read_key(pem, why);
	unsigned char jti[16], sig[64];
	char jti_text[sizeof jti * 2 + 1];
	char *header, *claims, *text, *input, *sig64, *out = NULL;
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
	{
		static const char h[] = "{\"alg\":\"ES256\",\"typ\":\"JWT\"}";

		header = b64url((const unsigned char *)h, sizeof h - 1);
	}
	claims = b64url((const unsigned char *)text, strlen(text));
	free(text);
	input = xasprintf("%s.%s", header, claims);
	if (sign_es256(key, input, sig)) {
		sig64 = b64url(sig, sizeof sig);
		out = xasprintf("%s.%s", input, sig64);
		free(sig64);
	} else {
		*why = "the client key could not sign the client assertion";
	}
	EVP_PKEY_free(key);
	free(header);
	free(claims);
	free(input);
	return out;
}
