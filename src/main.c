/* main.c - placeholder while the agent lands. */
#include <stdio.h>
int main(void)
{
    printf("gpulse %s\n", GP_VERSION);
    return 0;
}
