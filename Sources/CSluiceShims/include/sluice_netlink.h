// rtnetlink message layout macros (NLMSG_*, RTA_*) that Swift cannot import.
#pragma once
