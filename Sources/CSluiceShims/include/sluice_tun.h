// TUN device ioctls: struct ifreq and the TUNSET* request numbers are macros Swift cannot import.
#pragma once
