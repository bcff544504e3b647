// Launch-environment detection: each launcher's variables, precedence,
// and errors that name what was looked for.
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/error.h"
#include "test.h"

static void
clear_launch_env(void)
{
    static const char *vars[] = { "SHOAL_RANK", "SHOAL_SIZE", "SHOAL_STORE",
        "SHOAL_LAUNCHER", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
        "SLURM_PROCID", "SLURM_NTASKS" };

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        unsetenv(vars[i]);
    }
}

TEST(env_shoal_variables)
{
    shi_launch env;

    clear_launch_env();
    setenv("SHOAL_RANK", "2", 1);
    setenv("SHOAL_SIZE", "4", 1);
    setenv("SHOAL_STORE", "127.0.0.1:1234", 1);
    setenv("SHOAL_LAUNCHER", "shoalrun", 1);
    CHECK_OK(shi_launch_detect(&env, NULL));
    CHECK(env.rank == 2 && env.size == 4);
    CHECK(strcmp(env.store, "127.0.0.1:1234") == 0);
    CHECK(env.launcher_serves == 1);
}

TEST(env_torchrun_uses_next_port)
{
    shi_launch env;

    clear_launch_env();
    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "10.1.2.3", 1);
    setenv("MASTER_PORT", "29500", 1);
    CHECK_OK(shi_launch_detect(&env, NULL));
    CHECK(env.rank == 1 && env.size == 2);
    CHECK(strcmp(env.source, "torchrun") == 0);
    CHECK(strcmp(env.store, "10.1.2.3:29501") == 0);
    CHECK(env.launcher_serves == 0);
}

TEST(env_first_match_wins)
{
    shi_launch env;

    clear_launch_env();
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_NTASKS", "1", 1);
    setenv("SHOAL_STORE", "/tmp/shoal-store-file", 1);
    CHECK_OK(shi_launch_detect(&env, NULL));
    CHECK(env.rank == 3 && env.size == 8);
    CHECK(strcmp(env.source, "Open MPI") == 0);
    CHECK(strcmp(env.store, "/tmp/shoal-store-file") == 0);
}

TEST(env_pmi_and_slurm)
{
    shi_launch env;

    clear_launch_env();
    setenv("PMI_RANK", "1", 1);
    setenv("PMI_SIZE", "3", 1);
    setenv("MASTER_ADDR", "h", 1);
    setenv("MASTER_PORT", "5000", 1);
    CHECK_OK(shi_launch_detect(&env, NULL));
    CHECK(env.rank == 1 && strcmp(env.store, "h:5000") == 0);
    clear_launch_env();
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_NTASKS", "1", 1);
    CHECK_OK(shi_launch_detect(&env, NULL));
    CHECK(env.size == 1 && env.store[0] == '\0');
}

TEST(env_errors_name_the_variables)
{
    shi_launch env;

    clear_launch_env();
    CHECK_ST(shi_launch_detect(&env, NULL), SHOAL_EENV);
    CHECK(strstr(shi_error_text(), "PMI_RANK") != NULL);
    CHECK(strstr(shi_error_text(), "WORLD_SIZE") != NULL);

    setenv("SHOAL_RANK", "0", 1);
    CHECK_ST(shi_launch_detect(&env, NULL), SHOAL_EENV);
    CHECK(strstr(shi_error_text(), "SHOAL_SIZE") != NULL);

    setenv("SHOAL_SIZE", "2", 1);
    setenv("SHOAL_RANK", "2", 1);
    CHECK_ST(shi_launch_detect(&env, NULL), SHOAL_EENV);
    CHECK(strstr(shi_error_text(), "outside") != NULL);

    setenv("SHOAL_RANK", "one", 1);
    CHECK_ST(shi_launch_detect(&env, NULL), SHOAL_EENV);
    CHECK(strstr(shi_error_text(), "not an integer") != NULL);

    // Two ranks without any store.
    setenv("SHOAL_RANK", "0", 1);
    CHECK_ST(shi_launch_detect(&env, NULL), SHOAL_EENV);
    CHECK(strstr(shi_error_text(), "SHOAL_STORE") != NULL);
}

TEST(env_config_overrides_environment)
{
    shi_launch   env;
    shoal_config cfg = SHOAL_CONFIG_INIT;

    clear_launch_env();
    setenv("SHOAL_RANK", "5", 1);
    setenv("SHOAL_SIZE", "6", 1);
    cfg.rank   = 0;
    cfg.nranks = 2;
    cfg.store  = "127.0.0.1:4000";
    CHECK_OK(shi_launch_detect(&env, &cfg));
    CHECK(env.rank == 0 && env.size == 2);
    CHECK(strcmp(env.store, "127.0.0.1:4000") == 0);
    cfg.rank = 2;
    CHECK_ST(shi_launch_detect(&env, &cfg), SHOAL_EINVAL);
}

// Byte counts: the same K/M/G (and KiB/MiB/GiB) suffixes in every size
// setting; anything else names the variable.
TEST(env_bytes_suffixes)
{
    static const struct {
        const char *text;
        long long   want;
    } good[] = { { "4096", 4096 }, { "64K", 64 << 10 }, { "64k", 64 << 10 },
        { "4M", 4 << 20 }, { "4MiB", 4 << 20 }, { "2G", 2LL << 30 },
        { "1gib", 1LL << 30 } };
    static const char *bad[] = { "12x", "4MB", "K", "-1", "4 M", "4Mi",
        "99999999999999999999", "17179869184G" };
    long long          v;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        setenv("SHOAL_TEST_BYTES", good[i].text, 1);
        CHECK_OK(shi_env_bytes("SHOAL_TEST_BYTES", 7, &v));
        CHECK_MSG(v == good[i].want, "%s gave %lld", good[i].text, v);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("SHOAL_TEST_BYTES", bad[i], 1);
        CHECK_MSG(shi_env_bytes("SHOAL_TEST_BYTES", 7, &v) == SHOAL_EENV,
            "%s accepted", bad[i]);
        CHECK(strstr(shi_error_text(), "SHOAL_TEST_BYTES") != NULL);
    }
    unsetenv("SHOAL_TEST_BYTES");
    CHECK_OK(shi_env_bytes("SHOAL_TEST_BYTES", 7, &v));
    CHECK(v == 7);
}

// Every *_SECONDS setting takes a positive decimal number of seconds, the
// same rule the Python layer applies.
TEST(env_seconds_decimals)
{
    static const char *bad[] = { "0", "-1", "abc", "1e3", "nan", "inf", "0x10",
        " 3", "3s", "1.2.3", "." };
    int64_t            ms;

    unsetenv("SHOAL_TEST_SECONDS");
    CHECK_OK(shi_env_seconds("SHOAL_TEST_SECONDS", 42, &ms));
    CHECK(ms == 42);
    setenv("SHOAL_TEST_SECONDS", "3.5", 1);
    CHECK_OK(shi_env_seconds("SHOAL_TEST_SECONDS", 42, &ms));
    CHECK(ms == 3500);
    setenv("SHOAL_TEST_SECONDS", "30", 1);
    CHECK_OK(shi_env_seconds("SHOAL_TEST_SECONDS", 42, &ms));
    CHECK(ms == 30000);
    setenv("SHOAL_TEST_SECONDS", "0.0001", 1);
    CHECK_OK(shi_env_seconds("SHOAL_TEST_SECONDS", 42, &ms));
    CHECK(ms == 1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("SHOAL_TEST_SECONDS", bad[i], 1);
        CHECK_MSG(shi_env_seconds("SHOAL_TEST_SECONDS", 42, &ms) == SHOAL_EENV,
            "%s accepted", bad[i]);
        CHECK(strstr(shi_error_text(), "SHOAL_TEST_SECONDS") != NULL);
    }
    unsetenv("SHOAL_TEST_SECONDS");
}
