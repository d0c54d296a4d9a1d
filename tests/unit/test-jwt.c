/* ES256 client assertions and DPoP proofs (src/common/jwt.c): verifiable with the public key, right claims. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sodium.h>

#include "json.h"
#include "jwt.h"

/* A new key of curve (PEM, malloc'd) and its EVP_PKEY in *key. */
static char *
new_key(const char *type, const char *curve, EVP_PKEY **key)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *data, *pem;
	long n;

	*key = curve != NULL ? EVP_PKEY_Q_keygen(NULL, NULL, type, curve) :
	    EVP_PKEY_Q_keygen(NULL, NULL, type, (size_t)2048);
	cr_assert_not_null(*key);
	cr_assert_eq(PEM_write_bio_PrivateKey(bio, *key, NULL, NULL, 0, NULL, NULL), 1);
	n = BIO_get_mem_data(bio, &data);
	pem = strndup(data, (size_t)n);
	BIO_free(bio);
	return pem;
}

/* The base64url part of a JWT, decoded (malloc'd, NUL-terminated), its length in *len. */
static unsigned char *
part(const char *s, size_t n, size_t *len)
{
	unsigned char *out = malloc(n + 1);

	cr_assert_eq(sodium_base642bin(out, n, s, n, NULL, len, NULL,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING), 0);
	out[*len] = '\0';
	return out;
}

Test(jwt, assertion_verifies_with_the_public_key_and_names_the_client)
{
	EVP_PKEY *key;
	char *pem = new_key("EC", "P-256", &key);
	const char *why = NULL;
	char *jwt = jwt_client_assertion(pem, "client-1", "http://as.example", &why);
	char *dot1, *dot2;
	unsigned char *header, *claims, *sig, der[80], *p = der;
	size_t hlen, clen, slen;
	ECDSA_SIG *es = ECDSA_SIG_new();
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	cJSON *c;
	int dlen;

	cr_assert_not_null(jwt, "%s", why);
	dot1 = strchr(jwt, '.');
	dot2 = strrchr(jwt, '.');
	cr_assert(dot1 != NULL && dot2 != dot1);
	header = part(jwt, (size_t)(dot1 - jwt), &hlen);
	cr_assert_str_eq((char *)header, "{\"alg\":\"ES256\",\"typ\":\"JWT\"}");
	claims = part(dot1 + 1, (size_t)(dot2 - dot1 - 1), &clen);
	c = json_parse((char *)claims, clen);
	cr_assert_str_eq(json_get_string(c, "iss"), "client-1");
	cr_assert_str_eq(json_get_string(c, "sub"), "client-1");
	cr_assert_str_eq(json_get_string(c, "aud"), "http://as.example");
	cr_assert_eq(strlen(json_get_string(c, "jti")), 32);
	cr_assert(cJSON_GetObjectItem(c, "exp")->valuedouble > (double)time(NULL) + 200);
	/* The signature: r || s, 64 bytes, over "header.claims". */
	sig = part(dot2 + 1, strlen(dot2 + 1), &slen);
	cr_assert_eq(slen, 64);
	ECDSA_SIG_set0(es, BN_bin2bn(sig, 32, NULL), BN_bin2bn(sig + 32, 32, NULL));
	dlen = i2d_ECDSA_SIG(es, &p);
	cr_assert(dlen > 0);
	cr_assert_eq(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
	cr_assert_eq(EVP_DigestVerify(ctx, der, (size_t)dlen, (const unsigned char *)jwt,
	    (size_t)(dot2 - jwt)), 1);
	/* Another client id: the same signature does not verify. */
	jwt[dot1 - jwt + 2] ^= 1;
	cr_assert_neq(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
	    EVP_DigestVerify(ctx, der, (size_t)dlen, (const unsigned char *)jwt,
	    (size_t)(dot2 - jwt)) == 1, 1);
	EVP_MD_CTX_free(ctx);
	ECDSA_SIG_free(es);
	cJSON_Delete(c);
	free(header);
	free(claims);
	free(sig);
	free(jwt);
	free(pem);
	EVP_PKEY_free(key);
}

Test(jwt, keys_other_than_p256_are_refused)
{
	EVP_PKEY *key;
	char *p384 = new_key("EC", "P-384", &key), *rsa;
	const char *why = NULL;

	EVP_PKEY_free(key);
	rsa = new_key("RSA", NULL, &key);
	EVP_PKEY_free(key);
	cr_assert_not(jwt_key_usable(p384, &why));
	cr_assert_str_eq(why, "the client key is not an elliptic curve P-256 key (ES256)");
	cr_assert_not(jwt_key_usable(rsa, &why));
	cr_assert_null(jwt_client_assertion(rsa, "c", "a", &why));
	cr_assert_not(jwt_key_usable("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
	    &why));
	cr_assert_str_eq(why, "the client key is not a PEM private key");
	free(p384);
	free(rsa);
}

/* The P-256 public key of a JWK {"x","y"} (what a server verifying a DPoP proof reads). */
static EVP_PKEY *
jwk_key(const cJSON *jwk)
{
	size_t xl, yl;
	unsigned char *x = part(json_get_string(jwk, "x"), strlen(json_get_string(jwk, "x")), &xl);
	unsigned char *y = part(json_get_string(jwk, "y"), strlen(json_get_string(jwk, "y")), &yl);
	unsigned char pt[65] = { 4 };
	EVP_PKEY *key;

	cr_assert(xl == 32 && yl == 32);
	memcpy(pt + 1, x, 32);
	memcpy(pt + 33, y, 32);
	key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	cr_assert_eq(EVP_PKEY_set1_encoded_public_key(key, pt, sizeof pt), 1);
	free(x);
	free(y);
	return key;
}

Test(jwt, dpop_proof_verifies_with_its_jwk_and_binds_method_url_token_nonce)
{
	char *k = jwt_dpop_key_new(), *proof, *dot1, *dot2;
	const char *why = NULL;
	unsigned char *header, *claims, *sig, der[80], *p = der, ath[32];
	size_t hlen, clen, slen;
	ECDSA_SIG *es = ECDSA_SIG_new();
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	EVP_PKEY *pub;
	cJSON *h, *c;
	char *want_ath;
	size_t alen = sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	int dlen;

	cr_assert_not_null(k);
	cr_assert_null(strpbrk(k, "\r\n :"), "the key fits one header value");
	proof = jwt_dpop_proof(k, "POST", "https://mcp.example/mcp?x=1#f", "tok-1", "n-1", &why);
	cr_assert_not_null(proof, "%s", why);
	dot1 = strchr(proof, '.');
	dot2 = strrchr(proof, '.');
	header = part(proof, (size_t)(dot1 - proof), &hlen);
	h = json_parse((char *)header, hlen);
	cr_assert_str_eq(json_get_string(h, "typ"), "dpop+jwt");
	cr_assert_str_eq(json_get_string(h, "alg"), "ES256");
	cr_assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(h, "jwk"), "d"), "no private part");
	claims = part(dot1 + 1, (size_t)(dot2 - dot1 - 1), &clen);
	c = json_parse((char *)claims, clen);
	cr_assert_str_eq(json_get_string(c, "htm"), "POST");
	cr_assert_str_eq(json_get_string(c, "htu"), "https://mcp.example/mcp");
	cr_assert_str_eq(json_get_string(c, "nonce"), "n-1");
	crypto_hash_sha256(ath, (const unsigned char *)"tok-1", 5);
	want_ath = malloc(alen);
	sodium_bin2base64(want_ath, alen, ath, 32, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	cr_assert_str_eq(json_get_string(c, "ath"), want_ath);
	cr_assert_eq(strlen(json_get_string(c, "jti")), 32);
	pub = jwk_key(cJSON_GetObjectItem(h, "jwk"));
	sig = part(dot2 + 1, strlen(dot2 + 1), &slen);
	cr_assert_eq(slen, 64);
	ECDSA_SIG_set0(es, BN_bin2bn(sig, 32, NULL), BN_bin2bn(sig + 32, 32, NULL));
	dlen = i2d_ECDSA_SIG(es, &p);
	cr_assert_eq(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, pub), 1);
	cr_assert_eq(EVP_DigestVerify(ctx, der, (size_t)dlen, (const unsigned char *)proof,
	    (size_t)(dot2 - proof)), 1, "the proof verifies with the key its header names");
	cr_assert_null(jwt_dpop_proof("not-a-key", "GET", "https://a/", NULL, NULL, &why));
	EVP_MD_CTX_free(ctx);
	ECDSA_SIG_free(es);
	EVP_PKEY_free(pub);
	cJSON_Delete(h);
	cJSON_Delete(c);
	free(want_ath);
	free(header);
	free(claims);
	free(sig);
	free(proof);
	free(k);
}
