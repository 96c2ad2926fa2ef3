"""Token formats of the public secret scanners' catalogues, for the labelled corpus.

Each entry: kind -> (generator, variable name, prefix). The generator builds a token in
its documented format from the random generator it is given (the structure: prefix,
alphabet, lengths, separators; the checksum where the format has one); `prefix` is the
literal a developer would write when talking *about* the format (the corpus's false
examples use it: the prefix alone in code, a token cut short). `None`: the format has no
structure of its own and is only caught next to its name.

Formats follow the vendors' documentation and, for which formats exist, the rule
catalogues of gitleaks, trufflehog and secrets-patterns-db (read, not copied: every value
here is generated).
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"


class Gen:
    """Random strings of the corpus's seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.r = rng

    def s(self, n: int, alphabet: str = ALNUM) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def b64(self, nbytes: int) -> str:
        return base64.b64encode(self.r.randbytes(nbytes)).decode()

    def uuid(self) -> str:
        h = self.s(32, HEX)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{h[16:20]}-{h[20:]}"

    def b64json(self, obj: dict) -> str:
        return base64.b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _sentry_org(g: Gen) -> str:
    body = g.b64json({"iat": 1716239022.5, "url": "https://sentry.io", "region_url": "https://us.sentry.io",
                      "org": "acme-" + g.s(5, string.ascii_lowercase)})
    return f"sntrys_{body}_{g.s(43, B64)}"


def _onepassword_sa(g: Gen) -> str:
    body = g.b64json({"signInAddress": "acme.1password.com", "userAuth": {"method": "SRPg-4096", "alg": "PBES2g-HS256",
                      "iterations": 650000, "salt": g.s(22, URLSAFE)}, "email": g.s(12, string.ascii_lowercase) + "@1passwordserviceaccounts.com",
                      "srpX": g.s(64, HEX), "muk": {"alg": "A256GCM", "ext": True, "k": g.s(43, URLSAFE), "kty": "oct"}})
    return "ops_" + body


def _grafana_cloud(g: Gen) -> str:
    return "glc_" + g.b64json({"o": str(g.r.randint(10**5, 10**6)), "n": "stack-" + g.s(6, LOWER_ALNUM) + "-token",
                                "k": g.s(24, ALNUM), "m": {"r": "prod-eu-west-0"}})


def _grafana_key(g: Gen) -> str:
    return g.b64json({"k": g.s(32, ALNUM), "n": "deploy-" + g.s(4, LOWER_ALNUM), "id": g.r.randint(1, 99)})


def _jwt_b64(g: Gen) -> str:
    head = g.b64json({"alg": "RS256", "typ": "JWT", "kid": g.s(8, HEX)}).replace("+", "-").replace("/", "_")
    body = g.b64json({"sub": g.uuid(), "iss": "https://auth.acme.example", "exp": 1716325422}).replace("+", "-").replace("/", "_")
    jwt = f"{head}.{body}.{g.s(86, URLSAFE)}"
    return base64.b64encode(jwt.encode()).decode()


def _twitter_bearer(g: Gen) -> str:
    return "A" * 22 + g.s(12, ALNUM) + "%2B" + g.s(20, ALNUM) + "%3D" + g.s(50, ALNUM)


def _facebook_app_token(g: Gen) -> str:
    return f"{g.r.randint(10**14, 10**16 - 1)}|{g.s(27, URLSAFE)}"


def _terraform(g: Gen) -> str:
    return f"{g.s(14, ALNUM)}.atlasv1.{g.s(67, URLSAFE)}"


def _onepassword_secret_key(g: Gen) -> str:
    u = UPPER_ALNUM
    return f"A3-{g.s(6, u)}-{g.s(6, u)}-{g.s(5, u)}-{g.s(5, u)}-{g.s(5, u)}-{g.s(5, u)}"


FORMATS: dict[str, tuple[Callable[[Gen], str], str, str | None]] = {
    # observability, error tracking, feature flags
    "sentry_org_token": (_sentry_org, "SENTRY_AUTH_TOKEN", "sntrys_"),
    "sentry_user_token": (lambda g: "sntryu_" + g.s(64, HEX), "SENTRY_AUTH_TOKEN", "sntryu_"),
    "grafana_cloud_token": (_grafana_cloud, "GRAFANA_CLOUD_TOKEN", "glc_"),
    "grafana_service_account_token": (lambda g: f"glsa_{g.s(32)}_{g.s(8, HEX)}", "GRAFANA_SA_TOKEN", "glsa_"),
    "grafana_api_key": (_grafana_key, "GRAFANA_API_KEY", "eyJrIjoi"),
    "new_relic_user_key": (lambda g: "NRAK-" + g.s(27, UPPER_ALNUM), "NEW_RELIC_API_KEY", "NRAK-"),
    "new_relic_browser_key": (lambda g: "NRJS-" + g.s(19, HEX), "NEW_RELIC_BROWSER_KEY", "NRJS-"),
    "new_relic_insert_key": (lambda g: "NRII-" + g.s(32, URLSAFE), "NEW_RELIC_INSERT_KEY", "NRII-"),
    "new_relic_license_key": (lambda g: g.s(36, HEX) + "NRAL", "NEW_RELIC_LICENSE_KEY", "NRAL"),
    "dynatrace_token": (lambda g: f"dt0c01.{g.s(24, UPPER_ALNUM)}.{g.s(64, UPPER_ALNUM)}", "DT_API_TOKEN", "dt0c01."),
    "honeycomb_ingest_key": (lambda g: "hcaik_" + g.s(58, LOWER_ALNUM), "HONEYCOMB_API_KEY", "hcaik_"),
    "launchdarkly_token": (lambda g: "api-" + g.uuid(), "LD_ACCESS_TOKEN", "api-"),
    "launchdarkly_sdk_key": (lambda g: "sdk-" + g.uuid(), "LAUNCHDARKLY_SDK_KEY", "sdk-"),
    "posthog_personal_key": (lambda g: "phx_" + g.s(47), "POSTHOG_PERSONAL_API_KEY", "phx_"),
    # platforms, deploy, infrastructure
    "heroku_api_key_v2": (lambda g: "HRKU-AA" + g.s(58, URLSAFE), "HEROKU_API_KEY", "HRKU-"),
    "terraform_cloud_token": (_terraform, "TFE_TOKEN", ".atlasv1."),
    "doppler_personal_token": (lambda g: "dp.pt." + g.s(43), "DOPPLER_TOKEN", "dp.pt."),
    "doppler_service_token": (lambda g: "dp.st." + g.s(43), "DOPPLER_TOKEN", "dp.st."),
    "pulumi_token": (lambda g: "pul-" + g.s(40, HEX), "PULUMI_ACCESS_TOKEN", "pul-"),
    "onepassword_sa_token": (_onepassword_sa, "OP_SERVICE_ACCOUNT_TOKEN", "ops_eyJ"),
    "onepassword_secret_key": (_onepassword_secret_key, "OP_SECRET_KEY", "A3-"),
    "postman_api_key": (lambda g: f"PMAK-{g.s(24, HEX)}-{g.s(34, HEX)}", "POSTMAN_API_KEY", "PMAK-"),
    "linear_api_key": (lambda g: "lin_api_" + g.s(40), "LINEAR_API_KEY", "lin_api_"),
    "linear_oauth_token": (lambda g: "lin_oauth_" + g.s(64, HEX), "LINEAR_TOKEN", "lin_oauth_"),
    "notion_token": (lambda g: "ntn_" + g.s(11, string.digits) + g.s(35), "NOTION_TOKEN", "ntn_"),
    "notion_legacy_token": (lambda g: "secret_" + g.s(43), "NOTION_API_KEY", "secret_"),
    "planetscale_token": (lambda g: "pscale_tkn_" + g.s(43, URLSAFE), "PLANETSCALE_SERVICE_TOKEN", "pscale_tkn_"),
    "planetscale_password": (lambda g: "pscale_pw_" + g.s(43, URLSAFE), "DATABASE_PASSWORD", "pscale_pw_"),
    "planetscale_oauth_token": (lambda g: "pscale_oauth_" + g.s(43, URLSAFE), "PLANETSCALE_OAUTH", "pscale_oauth_"),
    "flyio_org_token": (lambda g: "fo1_" + g.s(43, URLSAFE), "FLY_API_TOKEN", "fo1_"),
    "flyio_macaroon": (lambda g: "FlyV1 fm2_" + g.b64(300) + ",fm2_" + g.b64(120), "FLY_API_TOKEN", "fm2_"),
    "rubygems_key": (lambda g: "rubygems_" + g.s(48, HEX), "GEM_HOST_API_KEY", "rubygems_"),
    "sourcegraph_token": (lambda g: f"sgp_{g.s(16, HEX)}_{g.s(40, HEX)}", "SRC_ACCESS_TOKEN", "sgp_"),
    "cloudflare_origin_ca_key": (lambda g: f"v1.0-{g.s(24, HEX)}-{g.s(146, HEX)}", "CF_ORIGIN_CA_KEY", "v1.0-"),
    "cloudflare_api_token": (lambda g: "cfut_" + g.s(40) + g.s(8, HEX), "CLOUDFLARE_API_TOKEN", "cfut_"),
    "openshift_token": (lambda g: "sha256~" + g.s(43, URLSAFE), "OPENSHIFT_TOKEN", "sha256~"),
    "harness_token": (lambda g: f"pat.{g.s(22, URLSAFE)}.{g.s(24)}.{g.s(20)}", "HARNESS_API_KEY", "pat."),
    "artifactory_api_key": (lambda g: "AKCp" + g.s(69), "ARTIFACTORY_API_KEY", "AKCp"),
    "artifactory_reference_token": (lambda g: "cmVmdGtu" + g.s(56), "JFROG_ACCESS_TOKEN", "cmVmdGtu"),
    "octopus_deploy_key": (lambda g: "API-" + g.s(26, UPPER_ALNUM), "OCTOPUS_API_KEY", "API-"),
    "nuget_api_key": (lambda g: "oy2" + g.s(43, LOWER_ALNUM), "NUGET_API_KEY", "oy2"),
    "clojars_token": (lambda g: "CLOJARS_" + g.s(60, LOWER_ALNUM), "CLOJARS_DEPLOY_TOKEN", "CLOJARS_"),
    "prefect_key": (lambda g: "pnu_" + g.s(36), "PREFECT_API_KEY", "pnu_"),
    "readme_key": (lambda g: "rdme_" + g.s(70, LOWER_ALNUM), "README_API_KEY", "rdme_"),
    "scalingo_token": (lambda g: "tk-us-" + g.s(48, URLSAFE), "SCALINGO_API_TOKEN", "tk-us-"),
    "snyk_service_token": (lambda g: f"snyk_sat.{g.s(8, LOWER_ALNUM)}.{g.s(40, URLSAFE)}", "SNYK_TOKEN", "snyk_sat."),
    "sonar_token": (lambda g: "squ_" + g.s(40, HEX), "SONAR_TOKEN", "squ_"),
    "sonarcloud_token": (lambda g: "sqco_" + g.s(59), "SONAR_TOKEN", "sqco_"),
    "infracost_key": (lambda g: "ico-" + g.s(32), "INFRACOST_API_KEY", "ico-"),
    "settlemint_token": (lambda g: "sm_pat_" + g.s(16), "SETTLEMINT_ACCESS_TOKEN", "sm_pat_"),
    "authress_key": (lambda g: f"sc_{g.s(12, LOWER_ALNUM)}.{g.s(4, LOWER_ALNUM)}.acc_{g.s(16, LOWER_ALNUM)}.{g.b64(48)}", "AUTHRESS_KEY", "sc_"),
    "clickhouse_key": (lambda g: "4b1d" + g.s(38), "CLICKHOUSE_KEY_SECRET", "4b1d"),
    "defined_networking_token": (lambda g: f"dnkey-{g.s(26, UPPER_ALNUM)}-{g.s(52, UPPER_ALNUM)}", "DN_API_KEY", "dnkey-"),
    "alibaba_access_key_id": (lambda g: "LTAI" + g.s(20), "ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI"),
    "tencent_secret_id": (lambda g: "AKID" + g.s(32), "TENCENTCLOUD_SECRET_ID", "AKID"),
    "yandex_api_key": (lambda g: "AQVN" + g.s(36, URLSAFE), "YC_API_KEY", "AQVN"),
    "yandex_iam_token": (lambda g: f"t1.{g.s(60, URLSAFE)}.{g.s(86, URLSAFE)}", "YC_IAM_TOKEN", "t1."),
    "aws_bedrock_api_key": (lambda g: "ABSKQmVkcm9ja0FQSUtleS" + g.s(110, B64) + "=", "AWS_BEARER_TOKEN_BEDROCK", "ABSK"),
    "scaleway_access_key": (lambda g: "SCW" + g.s(17, UPPER_ALNUM), "SCW_ACCESS_KEY", "SCW"),
    "docker_hub_token": (lambda g: "dckr_pat_" + g.s(27, URLSAFE), "DOCKERHUB_TOKEN", "dckr_pat_"),
    "buildkite_token": (lambda g: "bkua_" + g.s(40, LOWER_ALNUM), "BUILDKITE_API_TOKEN", "bkua_"),
    "circleci_token": (lambda g: f"CCIPAT_{g.s(22)}_{g.s(40, HEX)}", "CIRCLECI_TOKEN", "CCIPAT_"),
    "contentful_pat": (lambda g: "CFPAT-" + g.s(43, URLSAFE), "CONTENTFUL_MANAGEMENT_TOKEN", "CFPAT-"),
    "deno_deploy_token": (lambda g: "ddp_" + g.s(36), "DENO_DEPLOY_TOKEN", "ddp_"),
    "figma_token": (lambda g: "figd_" + g.s(40, URLSAFE), "FIGMA_TOKEN", "figd_"),
    "hubspot_private_app_token": (lambda g: "pat-na1-" + g.uuid(), "HUBSPOT_ACCESS_TOKEN", "pat-na1-"),
    "nvidia_key": (lambda g: "nvapi-" + g.s(64, URLSAFE), "NVIDIA_API_KEY", "nvapi-"),
    "pinecone_key": (lambda g: f"pcsk_{g.s(6)}_{g.s(63)}", "PINECONE_API_KEY", "pcsk_"),
    "supabase_token": (lambda g: "sbp_" + g.s(40, HEX), "SUPABASE_ACCESS_TOKEN", "sbp_"),
    "tailscale_key": (lambda g: f"tskey-auth-{g.s(12)}-{g.s(32)}", "TS_AUTHKEY", "tskey-"),
    "rootly_key": (lambda g: "rootly_" + g.s(64, HEX), "ROOTLY_API_TOKEN", "rootly_"),
    "ramp_secret": (lambda g: "ramp_sec_" + g.s(48), "RAMP_CLIENT_SECRET", "ramp_sec_"),
    "sourcegraph_cody_key": (lambda g: "slk_" + g.s(64, HEX), "CODY_LICENSE_KEY", "slk_"),
    "elevenlabs_key": (lambda g: "sk_" + g.s(48, HEX), "ELEVENLABS_API_KEY", "sk_"),
    "adafruit_key": (lambda g: "aio_" + g.s(28), "ADAFRUIT_IO_KEY", "aio_"),
    "apify_token": (lambda g: "apify_api_" + g.s(36), "APIFY_TOKEN", "apify_api_"),
    "bitbucket_dc_token": (lambda g: "BBDC-" + g.s(44, B64), "BITBUCKET_TOKEN", "BBDC-"),
    "nightfall_key": (lambda g: "NF-" + g.s(32), "NIGHTFALL_API_KEY", "NF-"),
    "okta_token": (lambda g: "00" + g.s(40, URLSAFE), "OKTA_API_TOKEN", None),
    "salesforce_access_token": (lambda g: f"00D{g.s(12)}!{g.s(96, ALNUM + '._')}", "SF_ACCESS_TOKEN", "00D"),
    "zoho_token": (lambda g: f"1000.{g.s(32, HEX)}.{g.s(32, HEX)}", "ZOHO_REFRESH_TOKEN", "1000."),
    "stripe_client_secret": (lambda g: f"pi_{g.s(24)}_secret_{g.s(25)}", "CLIENT_SECRET", "pi_"),
    "klaviyo_private_key": (lambda g: "pk_" + g.s(34, HEX), "KLAVIYO_PRIVATE_KEY", "pk_"),
    "zapier_webhook": (lambda g: f"https://hooks.zapier.com/hooks/catch/{g.r.randint(10**6, 10**8)}/{g.s(6, LOWER_ALNUM)}/", "ZAPIER_HOOK_URL", None),
    "misc_prefixed_key": (lambda g: "ak_live_" + g.s(30), "PAGARME_API_KEY", "ak_live_"),
    "adobe_client_secret": (lambda g: "p8e-" + g.s(32), "ADOBE_CLIENT_SECRET", "p8e-"),
    "airtable_pat": (lambda g: f"pat{g.s(14)}.{g.s(64, HEX)}", "AIRTABLE_TOKEN", None),
    "vault_legacy_token": (lambda g: "s." + g.s(24), "VAULT_TOKEN", None),
    # commerce, payments, shipping
    "square_token": (lambda g: "sq0atp-" + g.s(22, URLSAFE), "SQUARE_ACCESS_TOKEN", "sq0atp-"),
    "square_oauth_secret": (lambda g: "sq0csp-" + g.s(43, URLSAFE), "SQUARE_APPLICATION_SECRET", "sq0csp-"),
    "square_access_token": (lambda g: "EAAA" + g.s(60, URLSAFE), "SQUARE_ACCESS_TOKEN", "EAAA"),
    "shippo_token": (lambda g: "shippo_live_" + g.s(40, HEX), "SHIPPO_API_KEY", "shippo_live_"),
    "easypost_key": (lambda g: "EZAK" + g.s(54), "EASYPOST_API_KEY", "EZAK"),
    "easypost_test_key": (lambda g: "EZTK" + g.s(54), "EASYPOST_TEST_KEY", "EZTK"),
    "duffel_token": (lambda g: "duffel_live_" + g.s(43, URLSAFE), "DUFFEL_ACCESS_TOKEN", "duffel_live_"),
    "flutterwave_secret_key": (lambda g: f"FLWSECK-{g.s(32, HEX)}-X", "FLW_SECRET_KEY", "FLWSECK-"),
    "braintree_token": (lambda g: f"access_token$production${g.s(16, LOWER_ALNUM)}${g.s(32, HEX)}", "BRAINTREE_ACCESS_TOKEN", "access_token$production$"),
    "plaid_access_token": (lambda g: "access-production-" + g.uuid(), "PLAID_ACCESS_TOKEN", "access-production-"),
    "lob_key": (lambda g: "live_" + g.s(35, HEX), "LOB_API_KEY", "live_"),
    "gocardless_token": (lambda g: "live_" + g.s(40, URLSAFE), "GOCARDLESS_ACCESS_TOKEN", "live_"),
    "frameio_token": (lambda g: "fio-u-" + g.s(64, URLSAFE), "FRAMEIO_TOKEN", "fio-u-"),
    "typeform_token": (lambda g: "tfp_" + g.s(59, URLSAFE), "TYPEFORM_TOKEN", "tfp_"),
    "maxmind_license_key": (lambda g: f"{g.s(6)}_{g.s(29)}_mmk", "MAXMIND_LICENSE_KEY", "_mmk"),
    # messaging, mail, social
    "brevo_key": (lambda g: f"xkeysib-{g.s(64, HEX)}-{g.s(16)}", "BREVO_API_KEY", "xkeysib-"),
    "mailchimp_key": (lambda g: f"{g.s(32, HEX)}-us{g.r.randint(1, 21)}", "MAILCHIMP_API_KEY", None),
    "mailgun_pub_key": (lambda g: "pubkey-" + g.s(32, HEX), "MAILGUN_PUBLIC_KEY", "pubkey-"),
    "mailersend_token": (lambda g: "mlsn." + g.s(64, HEX), "MAILERSEND_API_TOKEN", "mlsn."),
    "resend_key": (lambda g: f"re_{g.s(8)}_{g.s(24)}", "RESEND_API_KEY", "re_"),
    "twitter_bearer_token": (_twitter_bearer, "TWITTER_BEARER_TOKEN", None),
    "facebook_access_token": (lambda g: "EAAC" + g.s(150), "FACEBOOK_ACCESS_TOKEN", "EAA"),
    "facebook_app_token": (_facebook_app_token, "FB_APP_TOKEN", None),
    "intra42_secret": (lambda g: "s-s4t2ud-" + g.s(64, HEX), "FT_SECRET", "s-s4t2ud-"),
    "jwt_base64": (_jwt_b64, "ENCODED_ID_TOKEN", "ZXlK"),
}

# Formats with no structure of their own: the value next to its vendor's name (VENDOR_KEY,
# SECRET). kind -> (generator, variable name).
KEYED: dict[str, tuple[Callable[[Gen], str], str]] = {
    "datadog_api_key": (lambda g: g.s(32, HEX), "DD_API_KEY"),
    "datadog_app_key": (lambda g: g.s(40, HEX), "DATADOG_APP_KEY"),
    "heroku_api_key": (lambda g: g.uuid(), "HEROKU_API_KEY"),
    "discord_client_secret": (lambda g: g.s(32, URLSAFE), "DISCORD_CLIENT_SECRET"),
    "algolia_admin_key": (lambda g: g.s(32, HEX), "ALGOLIA_ADMIN_KEY"),
    "cloudflare_global_api_key": (lambda g: g.s(37, HEX), "CLOUDFLARE_API_KEY"),
    "sentry_legacy_token": (lambda g: g.s(64, HEX), "SENTRY_TOKEN"),
    "okta_client_secret": (lambda g: g.s(40, URLSAFE), "OKTA_CLIENT_SECRET"),
    "zendesk_api_token": (lambda g: g.s(40), "ZENDESK_API_TOKEN"),
    "alibaba_access_key_secret": (lambda g: g.s(30), "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
    "twitter_api_secret": (lambda g: g.s(50), "TWITTER_API_SECRET"),
    "netlify_token": (lambda g: "nfp_" + g.s(36), "NETLIFY_AUTH_TOKEN"),
    "sumologic_access_id": (lambda g: "su" + g.s(12), "SUMO_ACCESS_ID"),
    "twitch_client_secret": (lambda g: g.s(30, LOWER_ALNUM), "TWITCH_CLIENT_SECRET"),
}
