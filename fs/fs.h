/*
 * The wsnap FUSE filesystem (libfuse3 lowlevel API) over a core index.
 * Implemented by the mount work.
 */
#ifndef WSNAP_FS_H
#define WSNAP_FS_H

#endif
