#include "orchestrator/hosts/ssh/cipher_choice.h"

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace ferry {

bool cpu_has_aes() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
#elif defined(__aarch64__)
  return (getauxval(AT_HWCAP) & HWCAP_AES) != 0 && (getauxval(AT_HWCAP) & HWCAP_PMULL) != 0;
#else
  return false;
#endif
}

std::string default_cipher_preference() {
  if (!cpu_has_aes()) return "";
  return "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,"
         "aes128-ctr,aes192-ctr,aes256-ctr";
}

}  // namespace ferry
